import Foundation
import Glibc
@testable import linkcond
import CChildProcess
import Testing

/// These install process-wide signal handlers: one at a time.
@Suite("linkcond run's command: as a shell runs it", .serialized)
struct ChildProcessTests {
    func temporaryFile() -> String {
        "/tmp/lc-child-\(UUID().uuidString.prefix(8))"
    }

    func field(_ name: String, in status: String) -> String? {
        status.split(separator: "\n").first { $0.hasPrefix(name + ":") }.map { $0.dropFirst(name.count + 1).trimmingCharacters(in: .whitespaces) }
    }

    @Test("The command gets default signal dispositions, no blocked signal, and our process group and session")
    func signalsAndGroup() async throws {
        let file = temporaryFile()
        defer { unlink(file) }
        // What linkcond may have inherited or set up itself: ignored and blocked signals.
        signal(SIGHUP, SIG_IGN)
        signal(SIGPIPE, SIG_IGN)
        var blocked = sigset_t()
        sigemptyset(&blocked)
        sigaddset(&blocked, SIGUSR1)
        var previous = sigset_t()
        pthread_sigmask(SIG_BLOCK, &blocked, &previous)
        defer {
            pthread_sigmask(SIG_SETMASK, &previous, nil)
            signal(SIGHUP, SIG_DFL)
        }
        // exec: cat becomes the child itself and reads its own state, not a waiting shell's.
        let status = try await ChildProcess.run(["/bin/sh", "-c", "exec cat /proc/self/status /proc/self/stat > \(file)"])
        #expect(status == 0)
        let text = try String(contentsOfFile: file, encoding: .utf8)
        #expect(field("SigIgn", in: text) == "0000000000000000")
        #expect(field("SigBlk", in: text) == "0000000000000000")
        // /proc/PID/stat: pid (comm) state ppid pgrp session ...
        let stat = try #require(text.split(separator: "\n").last)
        let afterComm = stat[stat.index(after: try #require(stat.lastIndex(of: ")")))...].split(separator: " ")
        #expect(Int32(afterComm[2]) == getpgrp(), "same process group as linkcond")
        #expect(Int32(afterComm[3]) == getsid(0), "same session, so the same terminal")
    }

    @Test("Exit statuses come back; a signal's death is 128 + N", arguments: [
        ("exit 0", 0), ("exit 3", 3), ("exit 255", 255), ("kill -TERM $$", 143), ("kill -KILL $$", 137),
    ] as [(String, Int32)])
    func statuses(script: String, expected: Int32) async throws {
        #expect(try await ChildProcess.run(["/bin/sh", "-c", script]) == expected)
    }

    @Test("A missing command is 127, one that cannot run 126, as in shells", arguments: [
        ("no-such-command-anywhere", 127), ("/no/such/file", 127), ("/etc/hostname", 126), ("/tmp", 126),
    ] as [(String, Int32)])
    func launchFailures(command: String, expected: Int32) async {
        let error = await #expect(throws: ChildProcess.LaunchError.self) { try await ChildProcess.run([command]) }
        #expect(error?.exitStatus == expected)
    }

    @Test("Signals sent to linkcond reach the command, and linkcond lives to report its status", arguments: [
        (SIGTERM, 143), (SIGINT, 130), (SIGHUP, 129), (SIGQUIT, 131), (SIGUSR1, 138),
    ] as [(Int32, Int32)])
    func forwarding(signalNumber: Int32, expected: Int32) async throws {
        let child = Task { try await ChildProcess.run(["/bin/sleep", "30"]) }
        try await Task.sleep(for: .milliseconds(300))
        kill(getpid(), signalNumber)
        let status = try await child.value
        #expect(status == expected)
    }
}

@Suite("linkcond run's command gets linkcond's inherited descriptors, not its own", .serialized)
struct ChildDescriptorTests {
    @Test("A socket linkcond opened stays out; a descriptor linkcond was given is passed on")
    func descriptors() async throws {
        // As if the shell had given linkcond a descriptor for the command: noted before
        // anything else. A free number of its own: other suites of this process use theirs.
        let opened = open("/etc/hostname", O_RDONLY)
        let given = fcntl(opened, F_DUPFD, 200)
        close(opened)
        linkcond_note_inherited_descriptors()
        // A socket linkcond opens itself, without close-on-exec, like its lease connection; at
        // a number no other suite held when the descriptors were noted: one of theirs closed
        // since would come back as this socket's, noted as inherited.
        let opening = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        let own = fcntl(opening, F_DUPFD, 300)
        close(opening)
        defer { close(own); close(given) }
        let file = "/tmp/lc-fds-\(UUID().uuidString.prefix(8))"
        defer { unlink(file) }
        #expect(try await ChildProcess.run(["/bin/sh", "-c", "exec ls -l /proc/self/fd > \(file)"]) == 0)
        let listing = try String(contentsOfFile: file, encoding: .utf8)
        #expect(listing.contains(" \(given) -> /etc/hostname"))
        // Other suites of this test process open sockets meanwhile; this one is the test's.
        #expect(!listing.contains(" \(own) -> socket:"), "\(listing)")
    }
}
