import CNetlink

/// Owns one reference to a libnl object (`rtnl_qdisc`, `rtnl_class`, `rtnl_cls`, `rtnl_link`,
/// `rtnl_act`, `nl_cache`) and drops it when the Swift value goes away.
///
/// Every libnl `*_alloc` and cache lookup returns +1; wrapping the pointer at the call site
/// keeps the matching `*_put` out of every early return.
final class NetlinkObject {
    let pointer: OpaquePointer

    init(_ pointer: OpaquePointer) {
        self.pointer = pointer
    }

    /// Wraps the result of an allocation, failing with `NetlinkError` when libnl is out of memory.
    init(allocating allocate: () -> OpaquePointer?, what: String) throws(NetlinkError) {
        guard let pointer = allocate() else {
            throw NetlinkError(code: .other, operation: "allocate \(what)", reason: "out of memory")
        }
        self.pointer = pointer
    }

    deinit {
        nl_object_put(pointer)
    }
}

/// Owns a libnl cache and frees it, with all objects it holds, when it goes away.
final class NetlinkCache {
    let pointer: OpaquePointer

    init(_ pointer: OpaquePointer) {
        self.pointer = pointer
    }

    deinit {
        nl_cache_free(pointer)
    }

    /// The cached objects, borrowed: they live as long as the cache.
    var objects: [OpaquePointer] {
        var result: [OpaquePointer] = []
        var object = nl_cache_get_first(pointer)
        while let current = object {
            result.append(current)
            object = nl_cache_get_next(current)
        }
        return result
    }
}
