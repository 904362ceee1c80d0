import Foundation
import ObjectGraph
import PostgresStore
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A mount whose network link to its PostgreSQL server is cut while a save is in flight: the
/// server on a host of its own, the mount on another (two network namespaces joined by a veth
/// pair, ``HostPair``), the cable pulled at the server's end so that the client's packets vanish
/// without an error, as when a switch dies. What the mount holds keeps answering; what needs
/// the server fails within the statement timeout; every write is either saved or refused at
/// fsync or close, and what the store holds afterwards agrees with what each writer was told.
@Suite(.serialized) struct CutLinkMountTests {
    typealias Stalled = StalledSaveMountTests

    @Test func aLinkCutMidSaveFreezesNoReadAndLosesNoWrite() throws {
        let hosts = try HostPair()
        defer { hosts.remove() }
        let server = try PostgresServer(name: "cutlink", on: hosts)
        defer { server.remove() }
        let folder = try ScratchSpace.folder("pgcutlink")
        defer { try? FileManager.default.removeItem(at: folder) }
        let sqlite = folder.appendingPathComponent("Company.sqlite")
        #expect(try run(try storefsBinary(), ["sample", "--objects", "300", sqlite.path]).status == 0)
        // Migrated through the socket; mounted from the client host through the network, with a
        // statement timeout of 10 s: what a read that needs the server may take in an outage.
        let local = server.url(schema: "cutlink")
        #expect(try run(try storefsBinary(), ["migrate", sqlite.path, local.absoluteString]).status == 0)
        let remote = URL(string: server.networkURL(schema: "cutlink")!.absoluteString + "&timeout=10")!
        let mount = try PostgresMountTests.URLMount(remote, inside: hosts.clientNamespace)
        defer { _ = try? mount.unmount() }
        let employees = try Stalled.objects(mount.path, "Employee").filter { $0.hasPrefix("p") }
        try #require(employees.count > 40)
        // Rows loaded (folders listed with their files' sizes), files never read. The save in
        // flight and the edit are of loaded objects, so that they reach the network only to save.
        let loaded = Array(employees[10..<40])
        #expect(try run("ls", ["-l"] + loaded.map { "\(mount.path)/Employee/\($0)" }).status == 0)
        let (saved, edited) = (loaded[0], loaded[loaded.count - 1])
        let notLoaded = try #require(try Stalled.objects(mount.path, "Milestone").filter { $0.hasPrefix("p") }.last)

        // The save is in flight when the cable goes: its first statement sits in the stopped
        // server's socket, the cable is pulled, and the server, continued, answers into nothing.
        try server.signalAll(SIGSTOP)
        var stopped = true
        defer { if stopped { try? server.signalAll(SIGCONT) } }
        let inFlight = Stalled.write("\(mount.path)/Employee/\(saved)/lastName", "InFlight", fsync: true)
        Thread.sleep(forTimeInterval: 1)
        #expect(inFlight.wait(seconds: 0) == nil, "the save waits for the server")
        try hosts.cut()
        var cut = true
        defer { if cut { try? hosts.restore() } }
        try server.signalAll(SIGCONT)
        stopped = false

        let latencies = Stalled.readLoaded(Array(loaded.dropFirst()), in: mount.path, while: "the link is cut")
        let listings = try Stalled.listLoaded(loaded, in: mount.path, while: "the link is cut")
        let edit = Stalled.write("\(mount.path)/Employee/\(edited)/lastName", "Edited", fsync: false)

        let started = Date()
        let needsServer = try run("timeout", ["60", "cat", "\(mount.path)/Milestone/\(notLoaded)/title"])
        let waited = Date().timeIntervalSince(started)
        print(
            "link cut mid-save: \(latencies.count) reads of loaded objects, median "
                + "\(String(format: "%.1f", Stalled.median(latencies) * 1000)) ms, max \(String(format: "%.1f", (latencies.max() ?? 0) * 1000)) ms; "
                + "ls max \(String(format: "%.1f", (listings.max() ?? 0) * 1000)) ms; a read that needs the server: "
                + "\(needsServer.error.trimmingCharacters(in: .whitespacesAndNewlines)) after \(String(format: "%.1f", waited)) s"
        )
        let failedAsExpected = ["Input/output error", "Connection timed out"].contains {
            needsServer.error.contains($0)
        }
        #expect(needsServer.status != 0 && failedAsExpected, "a read that needs the server fails: \(needsServer)")
        // The statement timeout (10 s) plus one connect attempt (10 s) at most, with slack for load.
        #expect(waited < 30, "a read that needs the server fails within the statement timeout: \(waited) s")
        #expect(
            Stalled.timedRead("\(mount.path)/Employee/\(loaded[1])/lastName") != nil,
            "loaded objects still read after a read failed")

        try hosts.restore()
        cut = false
        // Each write ends with an answer, saved ("ok") or refused (EIO) at fsync or close.
        let inFlightOutcome = inFlight.wait(seconds: 90)?.output ?? "(no answer)"
        let editOutcome = edit.wait(seconds: 90)?.output ?? "(no answer)"
        print(
            "link cut mid-save: the save in flight answered \(inFlightOutcome.debugDescription), the edit \(editOutcome.debugDescription)"
        )
        for outcome in [inFlightOutcome, editOutcome] {
            #expect(
                outcome.hasSuffix("ok\n") || outcome.hasSuffix("EIO\n"),
                "saved or refused: \(outcome)\n\(mount.logText.suffix(3000))")
            // An open and write of a loaded object go on at once; only fsync and close wait.
            let writeSeconds = outcome.split(separator: "\n").first.flatMap {
                $0.hasPrefix("written ") ? Double($0.dropFirst(8)) : nil
            }
            #expect((writeSeconds ?? 99) < 2, "a loaded object is written without waiting: \(outcome)")
        }

        // Cut again for longer than the statement timeout: a save cannot finish and is refused
        // at fsync, within the timeout and one reconnect, while loaded objects still read.
        let doomedName = loaded[1]
        try hosts.cut()
        cut = true
        let cutAgain = Date()
        let doomed = Stalled.write("\(mount.path)/Employee/\(doomedName)/lastName", "NotSaved", fsync: true)
        let doomedOutcome = doomed.wait(seconds: 60)?.output ?? "(no answer)"
        let refusedAfter = Date().timeIntervalSince(cutAgain)
        print(
            "link cut for good: the save answered \(doomedOutcome.debugDescription) after \(String(format: "%.1f", refusedAfter)) s"
        )
        #expect(doomedOutcome.hasSuffix("EIO\n"), "a save the server never gets is refused at fsync: \(doomedOutcome)")
        #expect(refusedAfter < 40, "refused within the statement timeout and one reconnect: \(refusedAfter) s")
        #expect(Stalled.timedRead("\(mount.path)/Employee/\(loaded[2])/lastName") != nil)
        try hosts.restore()
        cut = false

        // The link is back: the mount reconnects by itself, saves and reads from the server again.
        let after = Stalled.write("\(mount.path)/Employee/\(employees[3])/lastName", "AfterRestore", fsync: true)
        #expect(
            after.wait(seconds: 90)?.output.hasSuffix("ok\n") == true, "the mount saves again once the link is back")
        #expect(try run("timeout", ["60", "cat", "\(mount.path)/Milestone/\(notLoaded)/title"]).status == 0)
        #expect(try mount.unmount().status == 0)

        // What the store holds agrees with every answer: saved is kept, refused is not there.
        let values = try Stalled.lastNames(
            of: [saved, edited, employees[3], doomedName], in: local, type: PostgresStoreType())
        #expect(
            (values[0] == .string("InFlight")) == inFlightOutcome.hasSuffix("ok\n"), "\(values[0].debugDescription)")
        #expect((values[1] == .string("Edited")) == editOutcome.hasSuffix("ok\n"), "\(values[1].debugDescription)")
        #expect(values[2] == .string("AfterRestore") && values[3] != .string("NotSaved"))
    }
}
