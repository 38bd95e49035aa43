#!/usr/bin/env bash
# .tools/compat-venv with the generated assisted-service Python client and aicli
# (test/compat/requirements.txt) for the compatibility tests.
exec bash "$(dirname "$0")/install-python-venv.sh" compat-venv test/compat/requirements.txt python "the assisted-service Python client and aicli"
