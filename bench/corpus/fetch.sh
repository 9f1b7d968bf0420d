#!/bin/bash
# bench/corpus/fetch.sh: extract the corpus's sources at the commits pinned in programs.tsv into
# bench/corpus/src/<owner>+<name>/ (git-ignored; never commit them).
#
# Where the code comes from: a git directory per repository, looked up in this order:
#   $CORPUS_MIRROR/<owner>+<name>/repo/.git, $CORPUS_MIRROR/<owner>+<name>/repo (default CORPUS_MIRROR=/work/.mirror:
#   what the workplace's `fetch` tool leaves, e.g. fetch "github:NVIDIA/cuda-samples"; this machine has no
#   network otherwise), then bench/corpus/src/.git/<owner>+<name>.git, cloned from GitHub (bare) where a
#   network is reachable and CORPUS_CLONE=1.
# A snapshot may lack blobs (the fetch tool leaves out files of 4 MiB and more): those files are skipped and
# listed in src/<owner>+<name>/MISSING.txt; no program of programs.tsv needs one.
# Extracting again is skipped when src/<owner>+<name>/.fetched records the same commit and paths
# (FORCE=1 extracts again).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mirror=${CORPUS_MIRROR:-/work/.mirror}
src=${CORPUS_SRC:-$here/src}
list=${CORPUS_LIST:-$here/programs.tsv}
mkdir -p "$src"

# Files outside the programs' own directories that they include.
extra_paths() {
  case "$1" in
    NVIDIA/cuda-samples) echo "Common" ;;
    NVIDIA/cccl) echo "cub/test/test_util.h cub/test/mersenne.h c2h/include thrust/examples/include" ;;
    yuhc/gpu-rodinia) echo "common cuda/util" ;;
    sgrauerg/polybenchGpu) echo "common" ;;
  esac
}

gitdir_of() { # repo -> git directory, or nothing
  local key=${1/\//+} d
  for d in "$mirror/$key/repo/.git" "$mirror/$key/repo" "$src/.git/$key.git"; do
    if [ -f "$d/HEAD" ] && [ -d "$d/objects" ]; then echo "$d"; return; fi
  done
  if [ "${CORPUS_CLONE:-0}" = 1 ]; then
    mkdir -p "$src/.git"
    git clone --quiet --bare "https://github.com/$1.git" "$src/.git/$key.git" >&2 && echo "$src/.git/$key.git"
  fi
}

status=0
# One extraction per repository and commit: the union of its programs' directories and its extra paths.
while IFS=$'\t' read -r repo commit; do
  key=${repo/\//+}
  dest=$src/$key
  paths=$( (awk -F'\t' -v r="$repo" -v c="$commit" 'NR > 1 && $2 == r && $3 == c { print $4 }' "$list"; extra_paths "$repo" | tr ' ' '\n') | sort -u | tr '\n' ' ')
  stamp="$commit $paths"
  if [ "${FORCE:-0}" != 1 ] && [ -f "$dest/.fetched" ] && [ "$(cat "$dest/.fetched")" = "$stamp" ]; then
    echo "fetch.sh: $repo@${commit:0:12}: already there"
    continue
  fi
  g=$(gitdir_of "$repo")
  if [ -z "$g" ]; then
    echo "fetch.sh: $repo: no git directory under $mirror/$key (run the fetch tool: fetch github:$repo), skipped" >&2
    status=1
    continue
  fi
  if ! git --git-dir="$g" cat-file -e "$commit^{commit}" 2>/dev/null; then
    echo "fetch.sh: $repo: commit $commit is not in $g, skipped" >&2
    status=1
    continue
  fi
  # Blobs the snapshot lacks are left out of the archive (git archive stops at the first missing one).
  # shellcheck disable=SC2086
  missing=$(git --git-dir="$g" ls-tree -r --full-tree "$commit" -- $paths |
    awk -F'\t' '{ split($1, m, " "); if (m[2] == "blob") print m[3] "\t" $2 }' |
    while IFS=$'\t' read -r sha path; do git --git-dir="$g" cat-file -e "$sha" 2>/dev/null || echo "$path"; done)
  excludes=()
  while IFS= read -r p; do [ -n "$p" ] && excludes+=(":(exclude,literal)$p"); done <<< "$missing"
  rm -rf "$dest.part"
  mkdir -p "$dest.part"
  # shellcheck disable=SC2086
  git --git-dir="$g" archive --format=tar "$commit" -- $paths "${excludes[@]}" 2> >(grep -v '^error: invalid object' >&2) |
    tar -x -C "$dest.part"
  printf '%s\n' "$missing" | sed '/^$/d' > "$dest.part/MISSING.txt"
  echo "$stamp" > "$dest.part/.fetched"
  rm -rf "$dest"
  mv "$dest.part" "$dest"
  echo "fetch.sh: $repo@${commit:0:12}: $(find "$dest" -type f | wc -l) files into ${dest#"$PWD"/}" \
    "($(wc -l < "$dest/MISSING.txt") missing from the snapshot)"
done < <(awk -F'\t' 'NR > 1 { print $2 "\t" $3 }' "$list" | sort -u)
exit $status
