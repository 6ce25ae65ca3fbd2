#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// Why a file operation failed, in the words of `strerror`: `No such file or directory`,
/// `Permission denied`, or `not UTF-8 text`. FoundationEssentials' errors have no
/// `localizedDescription`, and their `description` is a dump of the error's fields.
public func fileErrorReason(_ error: any Error) -> String {
    guard let error = error as? CocoaError else { return "\(error)" }
    if let posix = error.underlying as? POSIXError {
        return String(cString: strerror(posix.code.rawValue))
    }
    if error.code == .fileReadInapplicableStringEncoding {
        return "not UTF-8 text"
    }
    return "file error \(error.code.rawValue)"
}
