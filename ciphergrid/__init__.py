"""ciphergrid: bulk encryption and decryption offloaded to accelerators."""
from .errors import *  # noqa: F401,F403
