"""The ``mlnb`` command's entry point: Ctrl-C and SIGTERM are handled from the first instant.

Importing mlnb (numpy, scipy, scikit-learn, numba) takes one to two seconds, and a signal in that
time used to end in a KeyboardInterrupt traceback. This package lies outside ``mlnb`` (importing
anything inside it runs ``mlnb/__init__`` and its heavy imports first) and imports nothing heavy:
it installs the handlers, then imports the CLI, whose commands install their own (which clean up
a results folder being written) and give these back when they end. Either way a signal ends the
command with one line ``interrupted`` and exit code 128 + the signal's number (130, 143).
"""

import gc
import os
import signal
import sys
import time

#: when this module was imported: the start of the command, the interpreter's own start-up aside
IMPORTED_AT = time.perf_counter()

WATCHED = (signal.SIGINT, signal.SIGTERM)

#: True once ``main`` runs: this process is the ``mlnb`` command, not a program or a test calling the CLI
#: (``mlnb run --profile`` then counts from the process's start, ``mlnb.timings.from_process_start``)
RUNNING_AS_COMMAND = False


def _interrupted_at_start_up(signum, frame):
    # nothing is written yet and nothing needs cleaning up: say so and leave at once (os._exit:
    # a half-imported interpreter should not run its exit handlers)
    sys.stderr.write("interrupted\n")
    sys.stderr.flush()
    os._exit(128 + signum)


def main():
    global RUNNING_AS_COMMAND
    RUNNING_AS_COMMAND = True
    for signum in WATCHED:
        signal.signal(signum, _interrupted_at_start_up)
    # Python's cyclic garbage collector stays off during the imports, until the command has made
    # its own (``mlnb.cli_process.imports_done`` freezes what they made and turns it back on)
    gc.disable()
    from mlnb.cli import main as cli_main

    try:
        return cli_main()
    finally:
        # at exit the interpreter would traverse every object once more (~0.5 s after a study,
        # measured): freeze them; what is freed still is (reference counts), the rest goes with
        # the process
        gc.freeze()


if __name__ == "__main__":
    sys.exit(main())
