#!/bin/sh
# Generates configure and the Makefile templates (needs autoconf, automake, libtool).
set -e
cd "$(dirname "$0")"
mkdir -p config/aux
autoreconf -fi
