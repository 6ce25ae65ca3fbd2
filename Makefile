# linkcond — the commands a user runs. See README.md.

PREFIX ?= /usr/local
DESTDIR ?=
BINDIR ?= $(PREFIX)/bin
DATADIR ?= $(PREFIX)/share
MANDIR ?= $(DATADIR)/man
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
SYSUSERSDIR ?= $(PREFIX)/lib/sysusers.d
TMPFILESDIR ?= $(PREFIX)/lib/tmpfiles.d
ZSHCOMPDIR ?= $(DATADIR)/zsh/site-functions
SYSCONFDIR ?= /etc

RELEASE := .build/release
GENERATED := .build/generated
# Written last by `generated`: `make install` builds only what `make` left out of date, so
# that `make && sudo make install` does not run the toolchain again as root.
GENERATED_STAMP := $(GENERATED)/.complete

.PHONY: all build test unit-test kernel-test demo bench fuzz install uninstall deb generated clean

all: generated

## Release build of linkcondd and linkcond: the Swift runtime and the C++ runtime under it linked
## in (the binaries need no toolchain where they are installed, start faster and take less
## memory: loading libstdc++ alone cost the client 1.4 MB and 3 ms, docs/performance.md),
## optimized for size. The C++ runtime is linked in by a directory that holds only its archive,
## searched first; without the archive (no libstdc++-dev), it stays a shared library.
PRODUCTS ?= linkcondd linkcond
STATIC_CXX := $(CURDIR)/.build/static-c++
CXX_ARCHIVE := $(shell clang -print-file-name=libstdc++.a 2>/dev/null)
RELEASE_FLAGS := -c release --static-swift-stdlib -Xswiftc -Osize $(if $(wildcard $(CXX_ARCHIVE)),-Xlinker -L$(STATIC_CXX))
# A binary is rebuilt when a source changed since it was built (swift build then decides what
# to compile); `make` after a build needs no toolchain at all.
SWIFT_INPUTS := Package.swift $(shell find Sources Benchmarks -type f \( -name '*.swift' -o -name '*.[ch]' -o -name '*.modulemap' -o -path '*/Assets/*' \) 2>/dev/null)
build: $(addprefix $(RELEASE)/,$(PRODUCTS))

$(RELEASE)/%: $(SWIFT_INPUTS)
	$(if $(wildcard $(CXX_ARCHIVE)),mkdir -p $(STATIC_CXX) && ln -sf $(CXX_ARCHIVE) $(STATIC_CXX)/libstdc++.a)
	swift build $(RELEASE_FLAGS) --product $*
	touch $@

## Everything, from a bare machine: setup, unit tests, and the kernel suite in a VM.
test:
	scripts/test

## The unit tests alone (no root, no kernel).
unit-test:
	swift test

## The kernel suite alone, in VMs, against the release binaries (and the benchmark tool):
## `make kernel-test K='EXPRESSION'` runs only the tests a pytest -k expression selects.
kernel-test:
	$(MAKE) build PRODUCTS="linkcondd linkcond linkcond-bench"
	scripts/kernel-test $(if $(K),-k "$(K)")

## Setup, then a demo in throwaway namespaces: Slow Net, Nasty Net and Black Hole, then two
## isolated jobs side by side on different profiles, measured.
demo:
	scripts/demo

## Setup, then the benchmarks behind docs/performance.md (over an hour, mostly in the VM).
bench:
	scripts/bench

## A million runs of each fuzzer (scripts/fuzz); the bounded runs of `make test` are shorter.
fuzz:
	scripts/fuzz

## Shell completions and man pages, generated from the command-line definitions of the
## binaries just built (swift-argument-parser's generate-manual, built on its own).
generated: $(GENERATED_STAMP)

$(GENERATED_STAMP): $(RELEASE)/linkcond $(RELEASE)/linkcondd
	rm -rf $(GENERATED) && mkdir -p $(GENERATED)/man
	for tool in linkcond linkcondd; do \
		$(RELEASE)/$$tool --generate-completion-script bash > $(GENERATED)/$$tool.bash && \
		sed -i '1{/^#!/d}' $(GENERATED)/$$tool.bash && \
		$(RELEASE)/$$tool --generate-completion-script zsh > $(GENERATED)/_$$tool && \
		$(RELEASE)/$$tool --generate-completion-script fish > $(GENERATED)/$$tool.fish || exit 1; \
	done
	swift build --product generate-manual
	for tool in linkcond linkcondd; do \
		"$$(swift build --show-bin-path)/generate-manual" $(RELEASE)/$$tool --multi-page \
			--authors "linkcond contributors" --output-directory $(GENERATED)/man || exit 1; \
	done
	touch $(GENERATED_STAMP)

# systemd is running and this is the real system, not a staging directory for a package.
LIVE_SYSTEMD = [ -z "$(DESTDIR)" ] && [ -d /run/systemd/system ] && command -v systemctl >/dev/null

## Installs binaries, built-in profiles and scenarios, systemd units, completions and man pages
## under $(DESTDIR)$(PREFIX), the example options file as /etc/default/linkcondd (kept if
## present), /etc/linkcond/profiles and /etc/linkcond/scenarios. On a live systemd machine it
## also creates the group and reloads systemd; `systemctl enable --now linkcondd.socket` then
## starts it.
install: $(GENERATED_STAMP)
	install -Dm755 $(RELEASE)/linkcondd $(DESTDIR)$(BINDIR)/linkcondd
	install -Dm755 $(RELEASE)/linkcond $(DESTDIR)$(BINDIR)/linkcond
	install -d $(DESTDIR)$(DATADIR)/linkcond/profiles
	install -m644 profiles/*.yaml $(DESTDIR)$(DATADIR)/linkcond/profiles/
	install -d $(DESTDIR)$(SYSCONFDIR)/linkcond/profiles
	install -d $(DESTDIR)$(DATADIR)/linkcond/scenarios
	install -m644 scenarios/*.yaml $(DESTDIR)$(DATADIR)/linkcond/scenarios/
	install -d $(DESTDIR)$(SYSCONFDIR)/linkcond/scenarios
	install -d $(DESTDIR)$(DATADIR)/linkcond/traces
	install -m644 traces/*.trace $(DESTDIR)$(DATADIR)/linkcond/traces/
	[ -e $(DESTDIR)$(SYSCONFDIR)/default/linkcondd ] || install -Dm644 systemd/linkcondd.default $(DESTDIR)$(SYSCONFDIR)/default/linkcondd
	install -d $(DESTDIR)$(SYSTEMDUNITDIR)
	sed 's|@BINDIR@|$(BINDIR)|g' systemd/linkcondd.service.in > $(DESTDIR)$(SYSTEMDUNITDIR)/linkcondd.service
	chmod 644 $(DESTDIR)$(SYSTEMDUNITDIR)/linkcondd.service
	install -m644 systemd/linkcondd.socket $(DESTDIR)$(SYSTEMDUNITDIR)/linkcondd.socket
	sed 's|@BINDIR@|$(BINDIR)|g' systemd/linkcond-console.service.in > $(DESTDIR)$(SYSTEMDUNITDIR)/linkcond-console.service
	chmod 644 $(DESTDIR)$(SYSTEMDUNITDIR)/linkcond-console.service
	install -Dm644 systemd/linkcond.sysusers $(DESTDIR)$(SYSUSERSDIR)/linkcond.conf
	install -Dm644 systemd/linkcond.tmpfiles $(DESTDIR)$(TMPFILESDIR)/linkcond.conf
	for tool in linkcond linkcondd; do \
		install -Dm644 $(GENERATED)/$$tool.bash $(DESTDIR)$(DATADIR)/bash-completion/completions/$$tool && \
		install -Dm644 $(GENERATED)/_$$tool $(DESTDIR)$(ZSHCOMPDIR)/_$$tool && \
		install -Dm644 $(GENERATED)/$$tool.fish $(DESTDIR)$(DATADIR)/fish/vendor_completions.d/$$tool.fish || exit 1; \
	done
	install -d $(DESTDIR)$(MANDIR)/man1
	install -m644 $(GENERATED)/man/*.1 $(DESTDIR)$(MANDIR)/man1/
	if $(LIVE_SYSTEMD); then \
		systemd-sysusers $(SYSUSERSDIR)/linkcond.conf && systemd-tmpfiles --create $(TMPFILESDIR)/linkcond.conf && \
			systemctl daemon-reload; \
	fi

## Stops and disables the units, then removes what `install` put in place and the stopped
## daemon's runtime directory (its socket, its state). What stays, on purpose:
## /etc/default/linkcondd and /etc/linkcond (your settings, profiles and scenarios), the
## history in /var/lib/linkcond, and the linkcond group.
uninstall:
	if $(LIVE_SYSTEMD); then \
		systemctl disable --now linkcond-console.service linkcondd.socket linkcondd.service 2>/dev/null || true; \
		rm -rf /run/linkcond; \
	fi
	rm -f $(DESTDIR)$(BINDIR)/linkcondd $(DESTDIR)$(BINDIR)/linkcond
	rm -rf $(DESTDIR)$(DATADIR)/linkcond
	rm -f $(DESTDIR)$(SYSTEMDUNITDIR)/linkcondd.service $(DESTDIR)$(SYSTEMDUNITDIR)/linkcondd.socket $(DESTDIR)$(SYSTEMDUNITDIR)/linkcond-console.service
	rm -f $(DESTDIR)$(SYSUSERSDIR)/linkcond.conf $(DESTDIR)$(TMPFILESDIR)/linkcond.conf
	for tool in linkcond linkcondd; do \
		rm -f $(DESTDIR)$(DATADIR)/bash-completion/completions/$$tool $(DESTDIR)$(ZSHCOMPDIR)/_$$tool \
			$(DESTDIR)$(DATADIR)/fish/vendor_completions.d/$$tool.fish; \
	done
	rm -f $(DESTDIR)$(MANDIR)/man1/linkcond.1 $(DESTDIR)$(MANDIR)/man1/linkcond.*.1 $(DESTDIR)$(MANDIR)/man1/linkcondd.1 $(DESTDIR)$(MANDIR)/man1/linkcondd.*.1
	if $(LIVE_SYSTEMD); then systemctl daemon-reload; fi
	@echo "uninstall: kept $(SYSCONFDIR)/default/linkcondd, $(SYSCONFDIR)/linkcond, /var/lib/linkcond (history) and the linkcond group; remove them by hand if you want them gone (docs/operations.md)"

## linkcond_VERSION_ARCH.deb, for `sudo apt install ./linkcond_*.deb`: what `make install` puts in
## place, with Debian's paths, maintainer scripts that create the group and enable the socket, and
## lintian's check (scripts/deb).
deb: $(GENERATED_STAMP)
	scripts/deb --lintian

clean:
	rm -rf .build
