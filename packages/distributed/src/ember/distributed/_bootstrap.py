"""How ``ember run`` starts a rank's script: as ``python script.py`` (or ``-m module``) would, but a
traceback that ends the rank is also written to ``EMBER_ERROR_FILE`` for the launcher's report."""

from __future__ import annotations

import json
import os
import runpy
import sys
import time
import traceback


def main() -> None:
    args = sys.argv[1:]
    module = bool(args) and args[0] == "-m"
    if module:
        args = args[1:]
    sys.argv = args
    try:
        if module:
            runpy.run_module(args[0], run_name="__main__", alter_sys=True)
        else:
            sys.path.insert(0, os.path.dirname(os.path.abspath(args[0])))
            runpy.run_path(args[0], run_name="__main__")
    except SystemExit as exit_:
        if exit_.code not in (None, 0):
            _write_error(f"SystemExit: {exit_.code}\n")
        raise
    except BaseException as error:
        tb = error.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename in (__file__, "<frozen runpy>"):
            tb = tb.tb_next  # the report starts in the user's code
        _write_error("".join(traceback.format_exception(type(error), error, tb)))
        raise


def _write_error(text: str) -> None:
    path = os.environ.get("EMBER_ERROR_FILE")
    if path:
        try:
            with open(path, "w") as out:
                json.dump({"timestamp": time.time(), "traceback": text}, out)
        except OSError:
            pass


if __name__ == "__main__":
    main()
