#!/bin/sh
# apiary demo reconciler: merges the task's change into the head's version.
set -e
sleep "${APIARY_DEMO_DELAY:-0}"
tmp=$(mktemp -d)
printf '%s\n' "$APIARY_RECONCILE_PATHS" | while IFS= read -r p; do
  [ -n "$p" ] || continue
  git show "$APIARY_RECONCILE_BASE:$p" > "$tmp/base"
  git show "$APIARY_RECONCILE_CANDIDATE:$p" > "$tmp/theirs"
  git merge-file "$p" "$tmp/base" "$tmp/theirs"
done
rm -rf "$tmp"
