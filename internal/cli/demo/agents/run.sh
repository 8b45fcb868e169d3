#!/bin/sh
# apiary demo agent: writes the files prepared for task $APIARY_TASK.
set -e
cp -R "$(dirname "$0")/../content/$APIARY_TASK/." .
