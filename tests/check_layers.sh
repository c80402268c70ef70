#!/usr/bin/env bash
# Fails when a lower layer includes a higher one. Order, low to high:
#   util < obs < ipc < runtime < web < worker < pool < exec < front < server < cli
set -euo pipefail
cd "$(dirname "$0")/../src"
layers=(util obs ipc runtime web worker pool exec front server cli)
status=0
for i in "${!layers[@]}"; do
  layer=${layers[$i]}
  [ -d "$layer" ] || continue
  for j in "${!layers[@]}"; do
    [ "$j" -gt "$i" ] || continue
    higher=${layers[$j]}
    if grep -rn --include='*.h' --include='*.cc' "#include \"$higher/" "$layer" ; then
      echo "layer violation: $layer/ includes $higher/" >&2
      status=1
    fi
  done
done
exit $status
