// `linkcond-fuzz TARGET [libFuzzer options] [CORPUS...]`, built with -sanitize=fuzzer by
// scripts/fuzz. In an ordinary build it replays the files it is given instead, so that a
// crash libFuzzer found can be reproduced under a debugger.
#if FUZZING
import CFuzzDriver
#endif
import Glibc
import LinkCondFuzzTargets

let arguments = CommandLine.arguments
guard arguments.count >= 2, let target = FuzzTarget(rawValue: arguments[1]) else {
    let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: "|")
    let usage = Array("usage: linkcond-fuzz \(names) [libFuzzer options] [corpus directories...]\n".utf8)
    _ = usage.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
    exit(2)
}
nonisolated(unsafe) var selected = target

#if FUZZING
/// libFuzzer's runtime refers to this entry point even when the driver is started by hand.
@_cdecl("LLVMFuzzerTestOneInput")
func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    selected.run(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}

var driverArguments = [arguments[0]] + arguments.dropFirst(2)
var argc = Int32(driverArguments.count)
var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = .allocate(capacity: driverArguments.count + 1)
for (index, argument) in driverArguments.enumerated() {
    argv![index] = strdup(argument)
}
argv![driverArguments.count] = nil
exit(LLVMFuzzerRunDriver(&argc, &argv) { data, size in fuzzOne(data, size) })
#else
import FoundationEssentials
var replayed = 0
for path in arguments.dropFirst(2) {
    var files = [path]
    if let names = try? FileManager.default.contentsOfDirectory(atPath: path) {
        files = names.sorted().map { path + "/" + $0 }
    }
    for file in files {
        guard let data = FileManager.default.contents(atPath: file) else { continue }
        selected.run(Array(data))
        replayed += 1
    }
}
print("replayed \(replayed) inputs through \(target.rawValue)")
#endif
