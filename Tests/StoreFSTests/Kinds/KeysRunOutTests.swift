import EmbeddedKernel
import Foundation
import FuseKit
import Logging
import ObjectGraph
import SQLiteStore
import Synchronization
import TestSupport
import Testing

@testable import StoreFS

#if canImport(Glibc)
    import Glibc
#endif

/// Keys that run out: a store whose highest key is Int64.max (as a patch of another tool, or an
/// app, may leave it) makes no new object; `mkdir Entity/new` says so with ENOSPC and a log
/// line naming the store and what to do, not "Operation not supported" without a word.
@Suite struct KeysRunOutTests {
    /// Keeps every line logged, for the test to read.
    struct RecordingLogHandler: LogHandler {
        let lines: Lines
        var logLevel: Logger.Level = .trace
        var metadata: Logger.Metadata = [:]

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            lines.lines.withLock { $0.append("\(event.level): \(event.message)") }
        }
    }

    final class Lines: Sendable {
        let lines = Mutex<[String]>([])
        var all: [String] { lines.withLock { $0 } }
    }

    @Test func mkdirWhenNoKeyIsLeftIsENOSPCWithALogLine() throws {
        let mount = try KernelMount(
            sql: "UPDATE Z_PRIMARYKEY SET Z_MAX = 9223372036854775807 WHERE Z_NAME = 'Person'")
        #expect(mount.kernel.finish().isEmpty)
        mount.coordinator.close()
        let coordinator = try PersistentStoreCoordinator.open(at: mount.url, types: [SQLiteStoreType()])
        defer {
            coordinator.close()
            try? FileManager.default.removeItem(at: mount.folder)
        }
        let recorded = Lines()
        let logger = Logger(label: "test") { _ in RecordingLogHandler(lines: recorded) }
        var configuration = StoreFSConfiguration()
        configuration.commitDelay = 3600
        configuration.changePollInterval = 3600
        let k = EmbeddedKernel(StoreFileSystem(coordinator: coordinator, configuration: configuration, logger: logger))
        #expect(errnoOf { try k.mkdir("Employee/new") } == ENOSPC)
        let line = recorded.all.first { $0.contains("mkdir Employee/new") }
        #expect(line?.contains("no higher key exists") == true, "the log says why: \(recorded.all)")
        // A free key below it still makes an object.
        #expect(errnoOf { try k.mkdir("Employee/p5000") } == nil)
        #expect(k.finish().isEmpty)
    }
}
