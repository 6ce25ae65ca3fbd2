import ControlAPI
import Testing

@Suite("Condition ids")
struct ConditionIDTests {
    @Test("An id reads back to the same condition", arguments: [
        "eth0", "netns/ci-1/eth0", "pid/4242/veth0", "pid/4194304/eth0", "pid/4242/", "netns/ci-1/@10.0.0.5:443",
    ])
    func roundTrip(text: String) throws {
        #expect(try ConditionID(parsing: text).description == text)
    }

    @Test("An id that cannot be one says why", arguments: [
        ("", "empty"), ("a/b", "netns/NAME/[INTERFACE]"), ("pid/0/eth0", "process id"), ("pid/-1/eth0", "process id"),
        ("pid/99999999/eth0", "process id"), ("netns/a b/eth0", "no '/', spaces"), ("netns/../eth0", "cannot be a namespace name"),
        ("netns/ci/waytoolonginterfacename", "at most 15"), ("netns/ci/eth0/x", "netns/NAME/[INTERFACE]"),
    ])
    func refused(text: String, reason: String) {
        #expect {
            try ConditionID(parsing: text)
        } throws: { error in
            "\(error)".contains(reason)
        }
    }

    @Test("A namespace's file is where the daemon enters it")
    func paths() {
        #expect(NetworkNamespaceReference.named("ci-1").path == "/run/netns/ci-1")
        #expect(NetworkNamespaceReference.process(4242).path == "/proc/4242/ns/net")
    }
}
