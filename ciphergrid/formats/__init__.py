"""Formats built on the AEADs' message batches: the sealed message of C2SP chunked encryption
(``cobblestone``)."""
