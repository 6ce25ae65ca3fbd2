import ArgumentParser
import ControlAPI

/// `--interface`: which condition a command is about. Without it, the daemon's own interface.
struct TargetOptions: ParsableArguments {
    @Option(help: ArgumentHelp(
        "The interface whose condition this is about; default: the one linkcondd was started for. Each interface has a condition of its own.",
        valueName: "name"
    ))
    var interface: String?

    func validate() throws {
        if let interface, let problem = InterfaceName.problem(interface) {
            throw ValidationError("--interface \(interface): \(problem)")
        }
    }
}
