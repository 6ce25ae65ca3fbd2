import ArgumentParser
import ControlAPI
import LinkCondClient
import Synchronization

struct Run: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run a command under a profile, then restore the previous condition.",
        discussion: """
            The profile holds while the command runs and ends when it exits, and also if linkcond \
            itself is killed: the daemon sees the connection close. The command runs in the \
            foreground as a shell would run it (same process group and terminal, default signal \
            dispositions); signals sent to linkcond are passed on to it. Exit status: the \
            command's own (128 + N if signal N ended it), whatever happens to the daemon \
            meanwhile; 125 if linkcond itself failed, so the command did not run; 126 if the \
            command could not be started; 127 if it was not found. \
            With --isolated, the command gets a network of its own (a sandbox joined to the host \
            through NAT), and only its traffic is conditioned: the host's and other jobs' stay \
            as they are. \
            Examples: linkcond run --profile "Slow Net" -- npm test; \
            linkcond run --isolated --profile "Black Hole" -- pytest tests/offline
            """
    )

    /// Exit statuses of `run` that are linkcond's own, as `env`, `timeout` and `docker run` use them.
    enum Status {
        static let linkcondFailed: Int32 = 125
    }

    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var target: TargetOptions
    @Option(help: "A profile's name, or a profile file.") var profile: String?
    @Option(help: "Or a scenario's name: its steps play while the command runs (see linkcond scenarios).") var scenario: String?
    @OptionGroup(title: "Condition without a profile") var condition: ConditionOptions
    @Option(name: .customLong("for"), help: ArgumentHelp("Restore the previous condition after this long even if the command still runs.", valueName: "duration"))
    var duration: String?
    @Flag(help: "Run the command in a sandbox of its own: a network namespace joined to the host through NAT, conditioned alone. Several can run at once, each with its own profile.")
    var isolated = false
    @Flag(help: "Take over a lease another client holds.") var force = false
    @Flag(help: "Delete a qdisc on the interface that linkcond did not create, instead of refusing.") var replaceForeign = false
    @Option(help: ArgumentHelp("Also write the summary printed when the command ends to this file, as JSON (a CI artifact).", valueName: "file"))
    var jsonSummary: String?
    @Option(help: ArgumentHelp("Write the command's packets under its condition to this pcapng file, from before it starts to after it ends (with --isolated, its sandbox's alone); the summary then names what the command talked to and warns of every plaintext HTTP request.", valueName: "file"))
    var capture: String?
    @OptionGroup var dropped: DroppedPacketsOption
    @Argument(parsing: .captureForPassthrough, help: "The command and its arguments, after --.") var command: [String] = []

    func validate() throws {
        // The command is captured with every flag after it, the parser's own --help among them.
        if let first = command.first, ["-h", "--help", "-help"].contains(first) {
            throw CleanExit.helpRequest(self)
        }
        try validateDuration(duration)
        if scenario != nil {
            guard profile == nil, condition.isEmpty else {
                throw ValidationError("give --scenario or a profile (--profile, --rate, --delay, ...), not both")
            }
        } else {
            _ = try ProfileSelection.resolve(argument: profile, options: condition, commandName: "linkcond run")
        }
        if isolated, target.condition != nil {
            throw ValidationError("--isolated makes a network of its own for the command; it takes no --interface, --netns, --pid, --to or --device")
        }
        if dropped.keepDropped && capture == nil {
            throw ValidationError("--keep-dropped keeps the dropped packets in the trace --capture writes; give --capture FILE")
        }
        if capture == "-" {
            throw ValidationError("--capture needs a file: stdout is the command's")
        }
        guard !arguments.isEmpty else {
            throw ValidationError("give the command to run after --, e.g. linkcond run --profile \"Slow Net\" -- npm test")
        }
    }

    /// The command without the `--` that separates it.
    var arguments: [String] {
        command.first == "--" ? Array(command.dropFirst()) : command
    }

    func run() async throws {
        let client = connection.client
        let selection = scenario == nil ? try ProfileSelection.resolve(argument: profile, options: condition, commandName: "linkcond run") : nil
        var request = LeaseRequest(
            profile: selection?.profile, definition: selection?.definition, scenario: scenario, for: duration,
            force: force ? true : nil, replaceForeign: replaceForeign ? true : nil, condition: target.condition
        )
        let arguments = self.arguments
        let capturePath = capture
        let keepDropped = dropped.keepDropped
        let told = Atomic<Bool>(false)
        let outcome: (Ran, LeaseOutcome)
        do {
            var sandbox: ChildProcess.IsolatedChild?
            if isolated {
                sandbox = try ChildProcess.isolated(arguments, resolvConf: SandboxDNS.resolvConfReplacement())
                request.condition = "pid/\(sandbox!.pid)/eth0"
                request.sandbox = true
            }
            outcome = try await client.withLease(request, interrupted: { heard in
                told.store(true, ordering: .relaxed)
                warn(Format.leaseInterruption(heard))
            }) { [sandbox] status in
                let counters = { () async -> ConditionStatsDocument? in
                    try? await client.stats().conditions.first { $0.id == status.id }
                }
                let before = await counters()
                var recording: TraceRecording?
                if let capturePath {
                    recording = try await TraceRecording.start(client: client, condition: status.id, path: capturePath, keepDropped: keepDropped)
                }
                let started = ContinuousClock.now
                let exitStatus: Int32
                if let sandbox {
                    let address = status.sandbox.map { " (\($0.address) via \($0.hostInterface))" } ?? ""
                    warn("\(status.profile?.name ?? "the condition") in a sandbox of its own\(address) while \(arguments[0]) runs")
                    for warning in status.sandbox?.warnings ?? [] {
                        warn("warning: \(warning)")
                    }
                    exitStatus = try await sandbox.run(arguments[0])
                } else {
                    let playing = status.scenario.map { "scenario '\($0.name)', step 1: " } ?? ""
                    warn("\(playing)\(status.profile?.name ?? "the condition") on \(status.id) while \(arguments[0]) runs")
                    exitStatus = try await ChildProcess.run(arguments)
                }
                let elapsed = ContinuousClock.now - started
                if let recording, let failure = await recording.stop() {
                    warn(failure)
                }
                let scenario = status.scenario == nil ? nil : (try? await client.status(condition: status.id))?.scenario
                return Ran(
                    status: status, exitStatus: exitStatus, before: before, after: await counters(), scenario: scenario,
                    seconds: Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
                )
            }
        } catch let error as ControlClientError {
            let explained = selection?.explain(error) ?? error
            warn("\(CommandHints.settingACondition.appended(to: explained.message, for: explained)); \(arguments[0]) did not run")
            throw ExitCode(Status.linkcondFailed)
        } catch let error as ChildProcess.LaunchError {
            warn(error.description)
            throw ExitCode(error.exitStatus)
        } catch {
            warn("\(error); \(arguments[0]) did not run")
            throw ExitCode(Status.linkcondFailed)
        }
        let ran = outcome.0
        var summary = RunSummary(
            condition: ran.status.id, profile: ran.status.profile?.name ?? "the condition", seconds: ran.seconds,
            exitStatus: ran.exitStatus, ended: outcome.1, before: ran.before, after: ran.after, scenario: ran.scenario
        )
        if let capturePath {
            switch RunSummary.Trace.read(capturePath) {
            case .success(let trace): summary.trace = trace
            case .failure(let failure): warn("no summary of the trace \(capturePath): \(failure)")
            }
        }
        warn(summary.line)
        summary.trace?.lines.forEach(warn)
        if let jsonSummary {
            do {
                try writeJSON(summary, to: jsonSummary)
            } catch {
                warn("could not write the summary to \(jsonSummary): \(error)")
            }
        }
        if case .connectionLost = outcome.1, !told.load(ordering: .relaxed) {
            warn(Format.leaseInterruption(outcome.1))
        }
        throw ExitCode(ran.exitStatus)
    }

    /// What came out of running the command under the condition.
    struct Ran: Sendable {
        var status: StatusResponse
        var exitStatus: Int32
        var before: ConditionStatsDocument?
        var after: ConditionStatsDocument?
        /// The scenario as the command ended, with each step's time.
        var scenario: ScenarioStatusDocument?
        var seconds: Double
    }
}
