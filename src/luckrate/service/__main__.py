"""``python -m luckrate.service --spec FILE ...``: the same as ``luckrate serve``."""

import argparse
import sys

from luckrate.service.app import add_arguments, run

if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="luckrate serve", description="Grade agent traces received over OTLP.")
    add_arguments(parser)
    sys.exit(run(parser.parse_args()))
