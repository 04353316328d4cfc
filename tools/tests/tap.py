# SPDX-License-Identifier: GPL-2.0
"""The lines a Python checker prints for tools/tests/check.sh's check_output.

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import tap
    tap.check(ok, "what is checked")    # "ok - ..." or "not ok - ..."
    tap.note("a remark")                 # "# ..."
    sys.exit(1 if tap.failed else 0)
"""

failed = 0


def check(ok, desc):
    global failed
    print(("ok - " if ok else "not ok - ") + desc, flush=True)
    if not ok:
        failed += 1
    return ok


def note(text):
    print("# " + text, flush=True)
