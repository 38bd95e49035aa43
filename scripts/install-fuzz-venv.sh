#!/usr/bin/env bash
# .tools/fuzz-venv with Schemathesis (test/fuzz/requirements.txt) for the API fuzz suite.
exec bash "$(dirname "$0")/install-python-venv.sh" fuzz-venv test/fuzz/requirements.txt schemathesis "Schemathesis"
