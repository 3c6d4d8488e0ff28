"""The scheduler's parts (the composite engine, engines/composite.py, runs requests through
them): ``run`` (dealing a piece of work's units to the engines, the watchdog, the stats),
``units`` (a message's bytes, an AEAD batch's messages), ``resident`` (a GPU-resident message
over several GPUs), ``speeds`` (the calibration).
"""
