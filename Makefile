# linkcond — the commands a user runs. See README.md.

.PHONY: all build test unit-test kernel-test demo clean

all: build

## Release build of linkcondd and linkcond.
build:
	swift build -c release

## Everything, from a bare machine: setup, unit tests, and the kernel suite in a VM.
test:
	scripts/test

## The unit tests alone (no root, no kernel).
unit-test:
	swift test

## The kernel suite alone, in a VM (after `swift build`).
kernel-test:
	scripts/vm-run -- Tests/Kernel/suite.sh

## Setup, then a demo in throwaway namespaces: Slow Net, Nasty Net and Black Hole, measured.
demo:
	scripts/demo

clean:
	rm -rf .build
