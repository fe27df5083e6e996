#!/usr/bin/env bash
# Layering check (docs/ARCHITECTURE.md): a stage under src/ may include only the stages
# listed for it below. A wrong-way include, or a new stage folder missing from the
# table, fails this test (it runs in `make test`).
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
declare -A allowed=(
  [trace]=""
  [kernel]="trace"
  [logs]="trace"
  [importers]="trace kernel logs"
  [pag]="trace"
  [cp]="trace pag"
  [summary]="trace pag cp"
  [output]="trace pag cp summary"
  [report]="trace pag cp summary output"
  [flame]="trace pag cp summary output"
  [sim]="trace"
  [flow]="trace"
  [megaphone]="trace flow"
  [loop]="trace flow megaphone scale pag cp summary"
  [mpi]=""
  [nexmark]="flow megaphone"
  [scale]="trace importers pag cp summary output sim"
  [serve]="trace importers pag cp summary output report scale"
  [bench]="trace"
  [cli]="*"
)
bad=0
for dir in "$root"/src/*/; do
  stage=$(basename "$dir")
  if [ -z "${allowed[$stage]+x}" ]; then
    echo "layering: src/$stage is not in tests/layering.sh's table (add it with the stages it may use)"
    bad=$((bad + 1))
    continue
  fi
  [ "${allowed[$stage]}" = "*" ] && continue
  while IFS=: read -r file line include; do
    used=$(sed -E 's/.*#include "([a-z0-9_]+)\/.*/\1/' <<<"$include")
    [ "$used" = "$stage" ] && continue
    [ -d "$root/src/$used" ] || continue  # a third-party header with a slash
    case " ${allowed[$stage]} " in
      *" $used "*) ;;
      *)
        echo "layering: ${file#"$root"/}:$line includes $used/, which $stage/ may not use (allowed: ${allowed[$stage]:-nothing})"
        bad=$((bad + 1))
        ;;
    esac
  done < <(grep -rnE '^\s*#\s*include "[a-z0-9_]+/' "$dir" --include='*.hpp' --include='*.cpp' --include='*.h')
done
# importers/common is shared by the importers and uses none of them.
while IFS=: read -r file line include; do
  echo "layering: ${file#"$root"/}:$line: importers/common may not include another importer ($include)"
  bad=$((bad + 1))
done < <(grep -rnE '#include "importers/' "$root/src/importers/common" | grep -v '"importers/common/\|"importers/importer')
if [ $bad -ne 0 ]; then
  echo "layering: $bad violation(s)"
  exit 1
fi
echo "layering: ok"
