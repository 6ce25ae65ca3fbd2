/// The rules the kernel applies to a network interface's name (`dev_valid_name`), checked before
/// a name goes into a path, a state file's name or a netlink request.
public enum InterfaceName {
    /// `IFNAMSIZ` less the terminating zero.
    public static let maximumLength = 15

    /// Why `name` cannot be an interface's name, or `nil` when it can.
    public static func problem(_ name: String) -> String? {
        if name.isEmpty { return "an interface name cannot be empty" }
        if name.utf8.count > maximumLength { return "an interface name has at most \(maximumLength) bytes" }
        if name == "." || name == ".." { return "'\(name)' cannot be an interface name" }
        for byte in name.utf8 where byte == UInt8(ascii: "/") || byte == UInt8(ascii: ":") || byte <= 0x20 || byte == 0x7F {
            return "an interface name has no '/', ':', spaces or control characters"
        }
        return nil
    }
}
