import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// What a tool printed and how it ended.
public struct ToolOutput: Sendable {
    public var status: Int32
    public var output: String
    public var error: String
}

/// Runs `executable` (looked up on PATH) with `arguments` and waits for it, at most `timeout`
/// seconds: then it and every process it started are killed and the call fails with a message
/// that says so (a test never waits forever, and CI never hangs).
///
/// posix_spawn and waitpid on the child's own pid, with output in temporary files: Foundation's
/// Process sometimes never notices a child's exit when many run at once (a `cat` stayed a zombie
/// while waitUntilExit waited), and a pipe's write end can be kept open by the fusermount3 that
/// libfuse forks for every in-process mount, so neither pipes nor Process are used here.
public func runTool(
    _ executable: String, _ arguments: [String], input: Data? = nil, environment: [String: String]? = nil,
    timeout: TimeInterval = 600
) throws -> ToolOutput {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("tool-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    let outPath = folder.appendingPathComponent("out").path
    let errPath = folder.appendingPathComponent("err").path
    let inPath = folder.appendingPathComponent("in").path
    _ = FileManager.default.createFile(atPath: inPath, contents: input ?? Data())

    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, inPath, O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, outPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    posix_spawn_file_actions_addopen(&actions, 2, errPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    // Every other descriptor of the test process (other tests' /dev/fuse sessions among them)
    // stays out of the child. glibc has the call; Swift's Glibc module does not show it.
    if let closeFrom = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") {
        typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        _ = unsafeBitCast(closeFrom, to: CloseFrom.self)(&actions, 3)
    }

    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    // Children start with no blocked signals and default handlers, whatever this thread has.
    var noSignals = sigset_t()
    sigemptyset(&noSignals)
    posix_spawnattr_setsigmask(&attributes, &noSignals)
    var defaults = sigset_t()
    sigfillset(&defaults)
    posix_spawnattr_setsigdefault(&attributes, &defaults)
    // Its own process group, so that a timeout kills what it started too.
    posix_spawnattr_setpgroup(&attributes, 0)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP))

    var environmentStrings = ProcessInfo.processInfo.environment
    if let environment { environmentStrings.merge(environment) { $1 } }
    let argv = ([executable] + arguments).map { strdup($0) } + [nil]
    let envp = environmentStrings.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer {
        argv.forEach { free($0) }
        envp.forEach { free($0) }
    }
    var pid: pid_t = 0
    let spawned = posix_spawnp(&pid, executable, &actions, &attributes, argv, envp)
    guard spawned == 0 else {
        throw ToolError("cannot run \(executable): \(String(cString: strerror(spawned)))")
    }
    var status: Int32 = 0
    let deadline = Date().addingTimeInterval(timeout)
    var pause: useconds_t = 1_000
    while true {
        let reaped = waitpid(pid, &status, WNOHANG)
        if reaped == pid { break }
        if reaped < 0 {
            guard errno == EINTR else {
                throw ToolError("waitpid for \(executable): \(String(cString: strerror(errno)))")
            }
            continue
        }
        if Date() > deadline {
            kill(-pid, SIGKILL)
            // A process stuck in the kernel (on a dead FUSE connection) may not die: it is not
            // waited for beyond a few seconds.
            let grace = Date().addingTimeInterval(5)
            while waitpid(pid, &status, WNOHANG) == 0 && Date() < grace { usleep(10_000) }
            let command = ([executable] + arguments).joined(separator: " ").prefix(300)
            throw ToolError("\(command) did not finish within \(Int(timeout)) s and was killed")
        }
        // Short commands end in a few milliseconds; long ones are polled less often.
        usleep(pause)
        pause = min(pause * 2, 50_000)
    }
    // WIFEXITED / WEXITSTATUS / WTERMSIG are macros: decode by hand.
    let exitStatus: Int32 = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    return ToolOutput(
        status: exitStatus,
        output: String(decoding: (try? Data(contentsOf: URL(fileURLWithPath: outPath))) ?? Data(), as: UTF8.self),
        error: String(decoding: (try? Data(contentsOf: URL(fileURLWithPath: errPath))) ?? Data(), as: UTF8.self))
}

public struct ToolError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
