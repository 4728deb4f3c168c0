#!/bin/sh
# Writes a C file that holds a binary file as a byte array:
#   osc_gpuic_embed.sh NAME FILE > out.c
# defines  const unsigned char NAME[]  and  const size_t NAME_len  (hidden symbols).  Plain od
# and awk, so that any build host can run it.
set -e
name=$1
file=$2
[ -n "$name" ] && [ -r "$file" ] || { echo "usage: $0 NAME FILE" >&2; exit 2; }
echo "/* Generated from $(basename "$file") by osc_gpuic_embed.sh: do not edit. */"
echo "#include <stddef.h>"
echo "__attribute__((visibility(\"hidden\"), aligned(64))) const unsigned char ${name}[] = {"
od -An -v -tx1 "$file" | awk '{ line = "   "; for (i = 1; i <= NF; ++i) line = line " 0x" $i ","; print line }'
echo "};"
echo "__attribute__((visibility(\"hidden\"))) const size_t ${name}_len = sizeof(${name});"
