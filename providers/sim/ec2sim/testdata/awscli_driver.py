# SPDX-License-Identifier: Apache-2.0
#
# Runs AWS CLI commands one after another in one Python process, through
# the CLI's own entry point (awscli.clidriver.main, what the `aws` script
# calls), so that the CLI's imports are paid once rather than per command.
#
# Each line on stdin is a JSON array of arguments (without "aws"); each
# answer on stdout is one JSON object: the exit status the `aws` script
# would have exited with, and what the command wrote to stdout and stderr.
import io
import json
import sys

import awscli.clidriver

answers = sys.stdout


def run(args):
    out, err = io.BytesIO(), io.BytesIO()
    stdout = io.TextIOWrapper(out, encoding="utf-8", write_through=True)
    stderr = io.TextIOWrapper(err, encoding="utf-8", errors="replace", write_through=True)
    sys.stdout, sys.stderr = stdout, stderr
    sys.argv = ["aws"] + args
    try:
        rc = awscli.clidriver.main()
    except SystemExit as e:
        rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    finally:
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
        # Detached, a wrapper no longer closes its buffer when it goes.
        stdout.flush()
        stderr.flush()
        stdout.detach()
        stderr.detach()
    return {
        "rc": 0 if rc is None else rc if isinstance(rc, int) else 1,
        "stdout": out.getvalue().decode("utf-8", "replace"),
        "stderr": err.getvalue().decode("utf-8", "replace"),
    }


for line in sys.stdin:
    answers.write(json.dumps(run(json.loads(line))) + "\n")
    answers.flush()
