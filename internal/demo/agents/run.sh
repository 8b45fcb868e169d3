#!/bin/sh
# apiary demo agent: writes the files prepared for task $APIARY_TASK
# (after $APIARY_DEMO_DELAY seconds, for a demo to watch).
set -e
sleep "${APIARY_DEMO_DELAY:-0}"
cp -R "$(dirname "$0")/../content/$APIARY_TASK/." .
