// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "linkcond",
    products: [
        .executable(name: "linkcondd", targets: ["linkcondd"]),
        .executable(name: "linkcond", targets: ["linkcond"]),
        // For tests and harnesses written in Swift: the daemon's API, `withCondition`, and a
        // Swift Testing trait or an XCTest helper that hold a profile while a test runs.
        .library(name: "LinkCondClient", targets: ["LinkCondClient"]),
        .library(name: "LinkCondTesting", targets: ["LinkCondTesting"]),
        .library(name: "LinkCondXCTest", targets: ["LinkCondXCTest"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
    ],
    targets: [
        // libnl-3 / libnl-route-3, found through pkg-config.
        .systemLibrary(
            name: "CNetlink",
            pkgConfig: "libnl-route-3.0",
            providers: [.apt(["libnl-3-dev", "libnl-route-3-dev"])]
        ),
        // libyaml, found through pkg-config. Used directly rather than through Yams, which
        // imports Foundation and with it ICU: several megabytes of resident memory in the daemon.
        .systemLibrary(
            name: "CYAML",
            pkgConfig: "yaml-0.1",
            providers: [.apt(["libyaml-dev"])]
        ),
        // Starting `linkcond run`'s command with every signal at its default, and a signal
        // handler that passes signals on to it: what must be C.
        .target(name: "CChildProcess"),
        // A signal handler that writes the signal's number into a pipe the daemon's event loop reads.
        .target(name: "CSignalPipe"),
        // The uid that owns the other end of a loopback TCP connection, asked of the kernel's
        // sock_diag: the metrics listener's connection limit per user.
        .target(name: "CSocketOwner"),
        // Listing a network namespace's TCP connections and destroying them (sock_diag's
        // SOCK_DESTROY): a condition's reset.
        .target(name: "CSocketDiag"),
        // Sets the Swift runtime's global-executor hooks, which a statically linked runtime hides from dlsym.
        .target(name: "CGlobalExecutorHooks"),
        // Safe Swift over libnl. Knows nothing of profiles.
        .target(name: "Netlink", dependencies: ["CNetlink", "CNFTables"]),
        // zlib, found through pkg-config: the kernel's configuration is /proc/config.gz.
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        // Facts about the host both binaries read: the default route, the kernel's configuration.
        .target(name: "HostFacts", dependencies: ["CZlib"]),
        // Matching names the way people type them, with suggestions: profiles and commands.
        .target(name: "NameMatching"),
        // IPv4 and IPv6 addresses as text and as network-order bytes.
        .target(name: "IPAddressText"),
        // libnftables, found through pkg-config: NAT for `run --isolated` sandboxes.
        .systemLibrary(name: "CNFTables", pkgConfig: "libnftables", providers: [.apt(["libnftables-dev"])]),
        // Sandboxes for `run --isolated`: addressing (pure), and joining a namespace to the host.
        // glibc's process descriptors, which its Swift module leaves out: a process pinned while
        // the daemon reads /proc/PID.
        .systemLibrary(name: "CPidfd"),
        .systemLibrary(name: "CMalloc"),
        .target(name: "Sandboxes", dependencies: ["Netlink", "CPidfd", "IPAddressText"]),
        // Profile model in human units, YAML decoding, validation, the catalog.
        .target(name: "Profiles", dependencies: ["CYAML", "NameMatching", "LinkCondVocabulary"]),
        // Profile -> TrafficPlan (pure), and applying plans through Netlink.
        .target(
            name: "Shaping",
            dependencies: [
                "Netlink", "Profiles", "IPAddressText",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The failures a condition can put on its target beside shaping: connections reset now,
        // DNS queries answered with a failure.
        .target(
            name: "Failures",
            dependencies: ["CSocketDiag", "Netlink", "Shaping", "Profiles", "IPAddressText", "HostFacts", .product(name: "Logging", package: "swift-log")]
        ),
        // pcapng, written and read (bounded: every byte of a trace is hostile): packet traces.
        .target(name: "Pcapng"),
        // libpcap, linked as Debian ships it: captures read from the kernel's AF_PACKET rings.
        .systemLibrary(name: "CPcap", providers: [.apt(["libpcap-dev"])]),
        // A condition's packets as a pcapng stream, read in its namespace through libpcap.
        .target(name: "Capture", dependencies: ["CPcap", "Pcapng", "Netlink"]),
        // The words daemon and client share: condition ids, peers, namespaces, durations, lease
        // holders, error codes. The domain speaks them without the API's documents.
        .target(name: "LinkCondVocabulary", dependencies: ["IPAddressText"]),
        // Codable request and response types shared by daemon and client.
        .target(name: "ControlAPI", dependencies: ["LinkCondVocabulary", "IPAddressText"]),
        // HTTP/1.1 over the daemon's Unix socket: the CLI's client, and the library product.
        .target(
            name: "LinkCondClient",
            dependencies: [
                "ControlAPI",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        // `@Test(.networkCondition("Slow Net"))`.
        .target(name: "LinkCondTesting", dependencies: ["LinkCondClient"]),
        // `try await withNetworkCondition("Slow Net") { … }` in an XCTestCase.
        .target(name: "LinkCondXCTest", dependencies: ["LinkCondClient"]),
        // The daemon's domain: conditions, their policy and leases, the registry, recovery and
        // persistence, scenario and trace players, sandboxes. No HTTP, no sockets of its own.
        .target(
            name: "Conditions",
            dependencies: [
                "LinkCondVocabulary", "HostFacts", "IPAddressText", "Netlink", "Profiles", "Shaping", "Sandboxes", "Failures",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The control API over HTTP: the server and its connection guard, request parsing, the
        // router, the error vocabulary's statuses, the metrics text.
        .target(
            name: "ControlHTTP",
            dependencies: [
                "Conditions", "ControlAPI", "IPAddressText", "Netlink", "Profiles", "Sandboxes", "Shaping", "CMalloc", "CSocketOwner", "Capture",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The daemon as a service: wiring the domain to the server, and the OS plumbing (signals,
        // systemd's notifications, huge pages, the allocator, the log format).
        .target(
            name: "LinkCondDaemon",
            dependencies: [
                "Conditions", "ControlHTTP", "ControlAPI", "Failures", "Netlink", "Profiles", "Shaping", "Sandboxes", "CMalloc", "CSignalPipe",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .executableTarget(
            name: "linkcondd",
            dependencies: [
                "LinkCondDaemon", "Conditions", "ControlHTTP", "Failures", "HostFacts", "ControlAPI", "Sandboxes", "CGlobalExecutorHooks",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // Measurements behind docs/performance.md (`make bench`).
        .executableTarget(
            name: "linkcond-bench",
            dependencies: [
                "ControlAPI", "LinkCondClient", "LinkCondDaemon", "Conditions", "ControlHTTP", "Netlink", "Profiles", "Sandboxes", "Shaping", "ShapingTestSupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Benchmarks/linkcond-bench"
        ),
        // The console in the browser (`linkcond console`): a small HTTP server for people's
        // browsers in front of the control socket, its page built into the binary.
        .target(
            name: "Console",
            dependencies: [
                "LinkCondClient", "ControlAPI", "LinkCondVocabulary", "IPAddressText", "HostFacts",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            resources: [
                .embedInCode("Assets/index.html"), .embedInCode("Assets/console.js"), .embedInCode("Assets/console.css"),
                .embedInCode("Assets/icon.svg"),
            ]
        ),
        .executableTarget(
            name: "linkcond",
            dependencies: [
                "Console", "LinkCondClient", "ControlAPI", "CChildProcess", "NameMatching", "HostFacts", "Pcapng",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // An in-memory model of the kernel's tc objects, for tests without root or netem.
        .target(
            name: "ShapingTestSupport",
            dependencies: ["Shaping", "Netlink", "Profiles", .product(name: "Logging", package: "swift-log")],
            path: "Tests/ShapingTestSupport"
        ),
        .testTarget(name: "ProfilesTests", dependencies: ["Profiles", "NameMatching"]),
        .testTarget(
            name: "ShapingTests",
            dependencies: ["Shaping", "ShapingTestSupport", "Profiles", "Netlink", .product(name: "Logging", package: "swift-log")]
        ),
        .testTarget(name: "ControlAPITests", dependencies: ["ControlAPI"]),
        .testTarget(name: "SandboxesTests", dependencies: ["Sandboxes"]),
        .testTarget(name: "FailuresTests", dependencies: ["Failures", "Shaping", "Profiles"]),
        .testTarget(name: "PcapngTests", dependencies: ["Pcapng"]),
        .testTarget(
            name: "ConsoleTests",
            dependencies: ["Console", "ControlAPI", "LinkCondClient", "LinkCondVocabulary", .product(name: "NIOHTTP1", package: "swift-nio")]
        ),
        .testTarget(
            name: "LinkCondDaemonTests",
            dependencies: [
                "LinkCondDaemon", "Conditions", "ControlHTTP", "LinkCondClient", "LinkCondTesting", "ControlAPI", "Profiles", "Shaping", "ShapingTestSupport", "HostFacts", "Sandboxes", "Netlink", "Failures", "Capture",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .testTarget(name: "LinkCondCLITests", dependencies: ["linkcond", "CChildProcess", "ControlAPI", "LinkCondClient", "Pcapng"]),
        // Fuzzing (scripts/fuzz): every parser of hostile bytes as a function of them, and an
        // executable that hands them to libFuzzer, or replays files in an ordinary build.
        .target(
            name: "LinkCondFuzzTargets",
            dependencies: [
                "Conditions", "ControlHTTP", "Profiles", "ControlAPI", "Failures", "Netlink", "Pcapng", "Console",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            path: "Fuzz/LinkCondFuzzTargets"
        ),
        .target(name: "CFuzzDriver", path: "Fuzz/CFuzzDriver"),
        .executableTarget(
            name: "linkcond-fuzz",
            dependencies: ["LinkCondFuzzTargets", "CFuzzDriver"],
            path: "Fuzz/linkcond-fuzz"
        ),
        .testTarget(name: "FuzzCorpusTests", dependencies: ["LinkCondFuzzTargets"]),
    ]
)
