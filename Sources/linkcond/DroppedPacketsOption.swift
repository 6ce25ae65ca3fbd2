import ArgumentParser

/// `--keep-dropped`: a trace that also holds the packets the condition dropped, as `capture` and
/// `run --capture` write it.
struct DroppedPacketsOption: ParsableArguments {
    @Flag(
        name: .customLong("keep-dropped"),
        help: "Also write the packets the condition dropped (loss, full queues), each at the time the kernel dropped it, on an interface of their own ('… dropped') with a comment saying why. Uses the kernel's drop monitor."
    )
    var keepDropped = false
}
