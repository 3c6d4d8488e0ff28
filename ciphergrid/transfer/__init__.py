"""The transfer layer: streaming host data through one device, chunked, overlapped, both bus
directions at once.

Modules (none imports another in a cycle; this package file imports none of them)::

    pinning    page-locking caller memory in place: registrations, their cache, pinned()
    staging    pinned host buffers: host_buffer(), transfer_mode(), the staging pool
    workers    the prepare / finish worker threads
    files      the file side of a stream: ends, mappings, read/write loops; RAM-disk prefault
    chunking   chunk size and depth per device: arguments, settings, the tuning cache, defaults
    flight     the one pipeline: jobs of any kind in flight on the lanes (up, kernels, down),
               from one thread or staged and retired by workers; drain and abort on failure
    driver     chunks, jobs (CipherJob, CopyJob) and the Pipeline (arrays and streams): the
               block ciphers' job kind of the one pipeline (batches: the AEADs')
    autotune   measuring the best chunk size and depth (writes the tuning cache)
    runs       cached pipelines (pipeline_for) and the entry points: run_chunks, copy,
               stream_crypt, stream_copy

Options come as a :class:`ciphergrid.settings.TransferSettings` (``settings=`` parameters, and
``Pipeline(settings=...)``); None means the environment's (:func:`ciphergrid.settings.transfer`,
the one place that reads the ``CIPHERGRID_*`` variables named below).

A message (a numpy array, a file, a pipe) is cut into chunks of whole blocks.  Chunk ``i`` uses
device slot ``s = i mod depth`` (``d_in[s]``, ``d_out[s]``) and goes through five steps::

    prepare   worker threads   host side of chunk i: page-lock its range of the caller's arrays
                               (CUDA: hostRegister, piecewise, ahead of the copies), or copy it /
                               read it from the file into a pinned staging buffer
    H2D       queue "up"       d_in[s]  <- host bytes       after K(i - depth): d_in[s] is free
    K         queue "compute"  d_out[s] <- mode(d_in[s])    after H2D(i) and D2H(i - depth)
    D2H       queue "down"     host     <- d_out[s]         after K(i)
    finish    worker threads   after D2H(i): copy the staging buffer out / write it to the file,
                               unregister the host pages, release the staging buffer

The three queues are separate in-order OpenCL command queues or CUDA streams, ordered only by the
events above, so H2D(i+1), K(i) and D2H(i-1) run at once, and the bus carries both directions at
the same time.  When the host has nothing to do per chunk (every page of both arrays already
page-locked, or a CPU device) the calling thread enqueues all chunks at once and waits once, for
the last D2H ("inline"); otherwise prepare/finish run in worker threads and the calling thread
only enqueues, its one wait being for a permit (a chunk whose finish step is done: the staging
buffer or host pages about to be reused).  The end of a GPU run is waited for by sleeping through
most of the expected time and polling the last event (a blocking wait's wake-up costs runs of a
few MiB a third of their time); host waits otherwise block (CUDA events with blocking sync: no
core spins).  A message shorter than SPLIT chunks is cut into SPLIT smaller ones so that its copies
overlap too.

Block offsets, CTR counters, CBC chaining values and XTS tweak positions are carried across chunk
boundaries, so every chunking gives the bytes of a one-shot call.  CBC decryption takes each
chunk's chaining value (the ciphertext block before it) from the INPUT, before any chunk of an
in-place run is written; CBC encryption is serial: the device runs it on one work-item, the
chaining value carried from launch to launch in the run's 16-byte scratch buffer, so it streams
too (though the router sends it to OpenSSL where OpenSSL has the cipher: a stream in pieces).
What the pipeline does not do itself: the XTS ciphertext-stealing tail of an array
(DeviceSession.crypt does it with the mode's ``tail`` after the run; a stream does it at its last
chunk), and what needs the whole message: padding and XTS over one data unit do not stream
(``Mode.streams``), so the CLI runs them through a CipherContext.

Host memory and copies
----------------------
* CUDA: an ordinary numpy array is page-locked in place (``cudaHostRegister``, portable: every
  GPU of the process sees the one registration, so several GPUs' pipelines share it) in pieces
  of ``pin_grain`` (``CIPHERGRID_PIN_GRAIN``, 64 MiB) on a page-aligned grid, by the prepare
  threads while earlier chunks are on the bus; the DMA engines then read and write the caller's
  arrays directly and the host copies no byte.  A copy never spans two registrations (CUDA
  refuses that): it is cut at piece edges.  Registrations are kept in a cache
  (:class:`pinning._PinCache`) while the array that owns the memory lives (a weak reference
  unregisters it just before numpy frees it), up to ``pin_cache`` bytes (``CIPHERGRID_PIN_CACHE``,
  default min(RAM/4, 64 GiB); ``0``: unregister after each run), so a reused buffer costs nothing
  after its first run.  Memory numpy does not own (bytes, mmap) is unregistered after the run.
  Registering costs host CPU time per byte (as much again to unregister), and fresh pages must be
  faulted in first (docs/benchmarks.md 4b); memory CuPy allocated page-locked
  (cupyx.empty_pinned, :func:`staging.host_buffer`) is used as it is, and
  ``with pinned(backend, arr):`` locks an array for a block.  A piece that cannot be registered
  (pages shared with another registration, limits) falls back to staging for its chunks.
* OpenCL on a GPU: OpenCL cannot page-lock caller memory, so chunks are staged through pinned
  (``CL_MEM_ALLOC_HOST_PTR``, mapped) buffers with a numpy copy on each side: two host memcpy per
  byte, done by the worker threads in parallel with the bus.
* OpenCL on a CPU device (PoCL): host memory is device memory; the caller's arrays are handed to
  the runtime directly (no staging copy).
* Files: a regular output of known size is reserved (``posix_fallocate``: a full disk fails
  there, cleanly) and mapped (``mmap``); writes to one file would serialise on the inode lock.
  When the input is a regular file too and the runtime page-locks caller memory (CUDA), the input
  is mapped read-only as well and the run is the array run above between the two mappings, with
  ``mapped_lock`` (``CIPHERGRID_MAPPED_LOCK``) saying which of them to page-lock: ``none`` (the
  default: the worker threads copy both through the pinned slots), ``in``, ``out`` or ``both``
  (the device reads the input's page-cache pages and writes the output's, each chunk's pages
  locked as it comes, the output's first faulted in by the worker threads, one write per page,
  where the driver would fault them one by one).  Locking a file's pages is not free: locking and
  unlocking are serialised in the driver, which makes ``both`` the slowest choice for a file read
  once (docs/benchmarks.md 4b).  Otherwise
  reader threads ``preadv`` (regular files, at offsets, in parallel) or ``readv`` (pipes, in
  order) into pinned slots, and the D2H goes into the mapped output (page-locked; else one copy
  from the slot by the finish threads; ``stream_mmap`` ``out`` (``CIPHERGRID_STREAM_MMAP=out``)
  forces this way).  Other outputs (pipes, O_APPEND, ``CIPHERGRID_STREAM_MMAP=0``) get
  ``pwrite``/``write`` from the slot, in which the device worked in place.
* A new output on a RAM disk (tmpfs) has its pages zero-filled by the kernel as they are first
  touched; the CLI has them faulted in by background threads (:func:`files.prefault_output`)
  while the device starts up, and waits for those before the stream begins.

``transfer=`` ("auto", "direct", "staged") overrides the choice (tests use it to run every path).
"""
