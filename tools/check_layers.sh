#!/usr/bin/env bash
# check_layers.sh: holds the sources to the layers of src/layers.txt.
#
#   tools/check_layers.sh includes ROOT     the #include lines under ROOT/src
#                                           and ROOT/include
#   tools/check_layers.sh objects ROOT OBJ... the calls between built objects
#                                           (nm), each placed by its path's
#                                           src/<layer>/
#
# includes: every quoted include resolves to a file of the tree (remat/...
# under include/, anything else under src/); a file includes only its own
# layer or earlier ones, and a public header only public headers; and the
# modules (a .c file with its .h and _internal.h, a public header with the
# room that implements it: layer/stem) form no circle.
# objects: every symbol an object uses that another object defines is an
# edge; it runs to the same layer or an earlier one, and the objects form no
# circle (a call circle that the includes hide: a header declaring what
# several files define).
# Prints one line per problem and exits 1 on any; 0 and a summary when
# clean; 2 on bad usage. Needs bash, awk, nm and tsort (binutils, coreutils).
set -uo pipefail

usage() {
  echo "usage: tools/check_layers.sh includes ROOT | objects ROOT OBJECT..." >&2
  exit 2
}
[ $# -ge 2 ] || usage
mode=$1 root=$2
shift 2
layers_file=$root/src/layers.txt
[ -r "$layers_file" ] || { echo "check_layers: cannot read $layers_file" >&2; exit 2; }
declare -A rank=()
i=0
for l in $(awk '!/^#/ && NF {print $1}' "$layers_file"); do
  i=$((i + 1))
  rank[$l]=$i
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The rank of a layer name (1 = lowest), or nothing.
rank_of() {
  echo "${rank[$1]:-}"
}

# The module of file $2 in layer $1 (the stem's first word), into REPLY.
module_of() {
  local n=${2##*/}
  REPLY=$1/${n%%[._]*}
}

# tsort finds circles: it names each loop's members on standard error.
circles() {
  local what=$1 edges=$2
  if ! tsort "$edges" >/dev/null 2>"$work/loops"; then
    echo "circle among $what:"
    grep -v 'input contains a loop' "$work/loops" | sed 's/^tsort: /  /'
    return 1
  fi
}

check_includes() {
  local bad=0 n=0 f rel layer inc target tl node tnode rf rt
  : >"$work/edges"
  while IFS= read -r f; do
    rel=${f#"$root"/}
    case $rel in
      include/remat/*/*) layer=${rel#include/remat/}; layer=${layer%%/*} ;;
      include/remat/*) layer=api ;;
      src/*/*) layer=${rel#src/}; layer=${layer%%/*} ;;
      *) echo "$rel: not in a layer's folder"; bad=1; continue ;;
    esac
    if [ "$layer" = api ]; then rf=999; else rf=$(rank_of "$layer"); fi
    if [ -z "$rf" ]; then
      echo "$rel: folder '$layer' is not a layer of src/layers.txt"; bad=1; continue
    fi
    module_of "$layer" "$rel"; node=$REPLY
    echo "$node $node" >>"$work/edges"
    while IFS= read -r inc; do
      n=$((n + 1))
      case $inc in
        remat/base/version.h) target=include/$inc.in ;;
        remat/*) target=include/$inc ;;
        *) target=src/$inc ;;
      esac
      if [ ! -f "$root/$target" ]; then
        echo "$rel: includes \"$inc\", which is not $target"; bad=1; continue
      fi
      case $rel:$target in
        include/*:src/*) echo "$rel: a public header includes the private \"$inc\""; bad=1; continue ;;
      esac
      case $target in
        include/remat/*/*) tl=${target#include/remat/}; tl=${tl%%/*} ;;
        include/remat/*) echo "$rel: includes the whole API \"$inc\"; include what it uses"; bad=1; continue ;;
        *) tl=${target#src/}; tl=${tl%%/*} ;;
      esac
      rt=$(rank_of "$tl")
      if [ -z "$rt" ] || [ "$rt" -gt "$rf" ]; then
        echo "$rel ($layer): includes \"$inc\" of the later layer $tl"; bad=1
      fi
      module_of "$tl" "$target"; tnode=$REPLY
      [ "$tnode" = "$node" ] || echo "$node $tnode" >>"$work/edges"
    done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f")
  done < <(find "$root/src" "$root/include" -type f \( -name '*.c' -o -name '*.h' -o -name '*.h.in' \) | LC_ALL=C sort)
  circles "modules (layer/first word)" "$work/edges" || bad=1
  [ $bad = 0 ] && echo "includes: $n includes in $(cut -d' ' -f1 "$work/edges" | sort -u | wc -l) modules run downward, no circle"
  return $bad
}

check_objects() {
  [ $# -gt 0 ] || usage
  local bad=0 o layer
  : >"$work/defs"
  : >"$work/uses"
  : >"$work/nodes"
  for o in "$@"; do
    case $o in
      */src/*/*) layer=${o##*/src/}; layer=${layer%%/*} ;;
      *) echo "$o: not under a src/<layer>/ path"; bad=1; continue ;;
    esac
    if [ -z "$(rank_of "$layer")" ]; then
      echo "$o: '$layer' is not a layer of src/layers.txt"; bad=1; continue
    fi
    local name=${o##*/src/}; name=${name%.o}; name=${name%.c}
    nm -P "$o" 2>/dev/null | awk -v n="$name" '
      $2 ~ /^[TDRBVWGSC]$/ {print $1, n >> "'"$work/defs"'"}
      $2 == "U" {print n, $1 >> "'"$work/uses"'"}' || { echo "$o: nm failed"; bad=1; }
    echo "$name $name" >>"$work/nodes"
  done
  # edges: user object -> defining object, once each
  awk 'NR == FNR {def[$1] = $2; next} ($2 in def) && def[$2] != $1 {print $1, def[$2]}' \
    "$work/defs" "$work/uses" | LC_ALL=C sort -u >"$work/edges"
  while read -r a b; do
    local ra rb
    ra=$(rank_of "${a%%/*}") rb=$(rank_of "${b%%/*}")
    if [ "$rb" -gt "$ra" ]; then
      echo "$a calls into $b of the later layer ${b%%/*}"; bad=1
    fi
  done <"$work/edges"
  local ncalls
  ncalls=$(wc -l <"$work/edges")
  cat "$work/nodes" >>"$work/edges"
  circles "objects" "$work/edges" || bad=1
  [ $bad = 0 ] && echo "objects: $ncalls object-to-object dependencies among $# objects run downward, no circle"
  return $bad
}

case $mode in
  includes) check_includes ;;
  objects) check_objects "$@" ;;
  *) usage ;;
esac
