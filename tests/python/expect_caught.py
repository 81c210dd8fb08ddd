"""expect_caught.py - a negative control of the Python module's tests.

Runs pytest on the given test selection (the environment names a module
variant built with a fault switch, python/CMakeLists.txt) and passes only
if the tests catch the fault: pytest reports a failed test, or
AddressSanitizer reports, or the interpreter dies of a signal (a broken
module's data race may crash it outright: SIGABRT, SIGSEGV). It fails if
every test passes, or if pytest does not end within the time limit.

    python3 expect_caught.py SECONDS TEST_SELECTION...
"""
import re
import signal
import subprocess
import sys


def main():
    limit = float(sys.argv[1])
    cmd = [sys.executable, "-m", "pytest", "-q", "-x", "-p",
           "no:cacheprovider"] + sys.argv[2:]
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
        print("CAUGHT: the interpreter died of %s"
              % signal.Signals(-proc.returncode).name)
        return 0
    if "ERROR: AddressSanitizer" in out:
        print("CAUGHT: an AddressSanitizer report")
        return 0
    if re.search(r"\b[1-9][0-9]* failed", out):
        print("CAUGHT: a failed test")
        return 0
    print("NOT CAUGHT: pytest exited %d and no test failed"
          % proc.returncode)
    return 1


if __name__ == "__main__":
    sys.exit(main())
