"""What the tests, the self-test and the benchmark check ciphergrid against (oracle.py)."""
