"""``on_fresh_tape``: run a test on a tape of its own (tests that measure the tape's length)."""

import functools
import threading


def on_fresh_tape(test):
    """Run ``test`` in a new thread, so on a tape of its own: graph handles that other tests
    still hold (e.g. in a failed or expected-to-fail test's traceback) cannot pin the tape it
    measures."""

    @functools.wraps(test)
    def run(*args, **kwargs):
        box = []

        def body():
            try:
                test(*args, **kwargs)
            except BaseException as e:  # noqa: B902 - re-raised in the test's thread
                box.append(e)

        th = threading.Thread(target=body)
        th.start()
        th.join()
        if box:
            raise box[0]

    return run
