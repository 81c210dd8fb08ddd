"""expect_caught.py - a negative control of the Python module's tests.

Runs pytest on the given test selection (the environment names a module
variant built with a fault switch, python/CMakeLists.txt) and passes only
if the tests catch the fault: pytest reports a failed test, or
AddressSanitizer reports, or the interpreter dies of a signal (a broken
module's data race may crash it outright: SIGABRT, SIGSEGV). It fails if
every test passes, or if pytest does not end within the time limit.

With --reason REGEX, it passes only if the output also says why, in
words REGEX finds (the failure the control names: its test's message, an
AddressSanitizer report), so a test that fails for another reason does not
count as catching the fault.

    python3 expect_caught.py SECONDS [--reason REGEX] TEST_SELECTION...
"""
import re
import signal
import subprocess
import sys


def main():
    limit = float(sys.argv[1])
    args = sys.argv[2:]
    reason = None
    if args[:1] == ["--reason"]:
        reason, args = args[1], args[2:]
    # --capture=sys: a sanitizer's report goes to file descriptor 2, which
    # pytest's default capture would keep in a file an abort never prints.
    cmd = [sys.executable, "-m", "pytest", "-q", "-x", "-p",
           "no:cacheprovider", "--capture=sys"] + args
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, timeout=limit)
    except subprocess.TimeoutExpired as e:
        sys.stdout.write((e.stdout or b"").decode(errors="replace"))
        print("NOT CAUGHT: pytest did not end in %g s" % limit)
        return 1
    out = proc.stdout.decode(errors="replace")
    sys.stdout.write(out)
    if reason is not None:
        m = re.search(reason, out)
        if m is None:
            print("NOT CAUGHT for its reason: pytest exited %d and its "
                  "output does not match %r" % (proc.returncode, reason))
            return 1
        print("The output says why: %r" % m.group(0))
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
