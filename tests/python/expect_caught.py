"""expect_caught.py - a negative control of the Python module's tests.

Runs pytest on the given test selection (the environment names a module
variant built with a fault switch, python/CMakeLists.txt) and passes only
if the tests catch the fault for the reason the control names: pytest
reports a failed test, or AddressSanitizer reports, or the interpreter
dies of a signal (a broken module's data race may crash it outright:
SIGABRT, SIGSEGV), AND the output matches EXPECT, a regular expression
naming what the fault breaks (the failing assertion's message, the kind of
sanitizer report). It fails if every test passes, if they fail for
another reason (an import error, a crash elsewhere, another assertion), or
if pytest does not end within the time limit.

    python3 expect_caught.py SECONDS --expect EXPECT TEST_SELECTION...
"""
import re
import signal
import subprocess
import sys


def usage():
    print("usage: expect_caught.py SECONDS --expect REGEX TEST_SELECTION..."
          "\n(a control must name the failure it expects)")
    return 2


def main():
    if len(sys.argv) < 5 or sys.argv[2] != "--expect":
        return usage()
    limit = float(sys.argv[1])
    expect = re.compile(sys.argv[3])
    # --capture=sys: a sanitizer's report goes to file descriptor 2, which
    # pytest's default capture would keep in a file an abort never prints.
    cmd = [sys.executable, "-m", "pytest", "-q", "-x", "-p",
           "no:cacheprovider", "--capture=sys"] + sys.argv[4:]
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, timeout=limit)
    except subprocess.TimeoutExpired as e:
        sys.stdout.write((e.stdout or b"").decode(errors="replace"))
        print("NOT CAUGHT: pytest did not end in %g s" % limit)
        return 1
    out = proc.stdout.decode(errors="replace")
    sys.stdout.write(out)
    if proc.returncode < 0:
        how = "the interpreter died of %s" % signal.Signals(
            -proc.returncode).name
    elif "ERROR: AddressSanitizer" in out:
        how = "an AddressSanitizer report"
    elif re.search(r"\b[1-9][0-9]* failed", out):
        how = "a failed test"
    else:
        print("NOT CAUGHT: pytest exited %d and no test failed"
              % proc.returncode)
        return 1
    m = expect.search(out)
    if m is None:
        print("NOT CAUGHT FOR ITS REASON: %s, but nothing in the output "
              "matches %r" % (how, expect.pattern))
        return 1
    print("CAUGHT: %s: %s" % (how, m.group(0)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
