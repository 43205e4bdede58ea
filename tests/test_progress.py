"""The progress bar shows only on a terminal."""

import io

from luckrate.progress import Progress


def test_progress_bar_only_on_a_terminal():
    class Tty(io.StringIO):
        def isatty(self):
            return True

    for stream, shown in ((Tty(), True), (io.StringIO(), False)):
        with Progress(400, "grading", stream) as bar:
            for _ in range(400):
                bar.advance()
        assert ("400/400" in stream.getvalue()) is shown
