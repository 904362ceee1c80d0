import Foundation
import TestSupport
import Testing

/// The runner every test starts programs with never waits forever: a program that outlives its
/// timeout is killed with everything it started, and the test fails with a message saying so.
@Suite struct ToolRunnerTests {
    @Test func aProgramThatOutlivesItsTimeoutIsKilledAndSaysSo() throws {
        let started = Date()
        // The shell starts a child that would outlive it: both are killed.
        let marker = FileManager.default.temporaryDirectory.appendingPathComponent("runner-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: marker) }
        #expect {
            try runTool("sh", ["-c", "sleep 60 & echo $! > \(marker.path); wait"], timeout: 1)
        } throws: { error in
            "\(error)".contains("did not finish within 1 s and was killed")
        }
        #expect(Date().timeIntervalSince(started) < 15, "it returned soon after the timeout")
        let child = try #require(
            Int32(String(contentsOf: marker, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(eventually(timeout: 10) { kill(child, 0) != 0 }, "the program's child was killed too")
    }

    @Test func aProgramThatEndsInTimeGivesItsOutput() throws {
        let result = try runTool("sh", ["-c", "echo out; echo err >&2; exit 3"], timeout: 30)
        #expect(result.status == 3 && result.output == "out\n" && result.error == "err\n")
    }
}
