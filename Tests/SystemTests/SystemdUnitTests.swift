import Foundation
import Testing

/// `systemd-analyze verify` accepts every unit in systemd/, and rejects a broken copy: a check
/// that would also pass a broken unit proves nothing.
@Suite struct SystemdUnitTests {
    /// The unit files in systemd/.
    static func units() throws -> [String] {
        let folder = packageRoot.appendingPathComponent("systemd").path
        let suffixes = [".service", ".mount", ".automount", ".socket", ".timer", ".path", ".target"]
        return try FileManager.default.contentsOfDirectory(atPath: folder)
            .filter { name in suffixes.contains { name.hasSuffix($0) } }.sorted()
    }

    /// Verifies `text` as unit `name` (a template gets the instance "test"), with the binary
    /// pointing at the built storefs and the configuration in a scratch /etc/storefs.
    /// Returns nil when verify is silent and succeeds, or what it complained about.
    static func verify(unit text: String, named name: String, in scratch: Scratch) throws -> String? {
        let analyze = try tool("systemd-analyze", package: "systemd")
        let configurations = scratch.path + "/etc/storefs"
        try FileManager.default.createDirectory(atPath: configurations, withIntermediateDirectories: true)
        try "STORE=\(scratch.store)\nMOUNTPOINT=\(scratch.mountPoint)\nOPTIONS=ro\n"
            .write(toFile: configurations + "/test.conf", atomically: true, encoding: .utf8)
        let instance = name.replacingOccurrences(of: "@.", with: "@test.")
        let units = scratch.path + "/units"
        try FileManager.default.createDirectory(atPath: units, withIntermediateDirectories: true)
        let substituted = text.replacingOccurrences(of: "/usr/local/bin/storefs", with: try storefsBinary())
            .replacingOccurrences(of: "/etc/storefs/", with: configurations + "/")
        try substituted.write(toFile: units + "/" + instance, atomically: true, encoding: .utf8)
        let result = try run(analyze, ["verify", "--man=no", units + "/" + instance])
        let complaints = (result.output + result.errorOutput).trimmingCharacters(in: .whitespacesAndNewlines)
        if result.succeeded && complaints.isEmpty { return nil }
        return "exit status \(result.status): \(complaints)"
    }

    @Test func everyUnitPassesSystemdAnalyzeVerify() throws {
        let units = try Self.units()
        #expect(units.contains("storefs@.service"))
        for name in units {
            let scratch = try Scratch()
            defer { scratch.remove() }
            let text = try String(contentsOf: packageRoot.appendingPathComponent("systemd/" + name), encoding: .utf8)
            let complaint = try Self.verify(unit: text, named: name, in: scratch)
            #expect(complaint == nil, "systemd-analyze verify \(name): \(complaint ?? "")")
        }
    }

    /// The negative controls: a misspelt setting and a missing binary must both be caught.
    @Test(arguments: [
        ("Type=notify", "Typ=notify"),
        ("KillMode=mixed", "KillMode=mixd"),
        ("ExecStart=/usr/local/bin/storefs", "ExecStart=/usr/local/bin/storefs-missing")
    ])
    func aBrokenCopyFailsVerify(original: String, broken: String) throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let text = try String(
            contentsOf: packageRoot.appendingPathComponent("systemd/storefs@.service"), encoding: .utf8)
        #expect(text.contains(original), "the unit no longer contains \(original); update the control")
        let complaint = try Self.verify(
            unit: text.replacingOccurrences(of: original, with: broken), named: "storefs@.service", in: scratch)
        #expect(complaint != nil, "verify accepted a unit with \(broken)")
    }

    @Test func theUnitIsANotifyServiceThatStopsWithSIGTERM() throws {
        let text = try String(
            contentsOf: packageRoot.appendingPathComponent("systemd/storefs@.service"), encoding: .utf8)
        let lines = Set(text.split(separator: "\n").map(String.init))
        for expected in [
            "Type=notify", "NotifyAccess=main", "KillSignal=SIGTERM", "KillMode=mixed", "Restart=on-failure",
            "EnvironmentFile=/etc/storefs/%i.conf", "DeviceAllow=/dev/fuse rw"
        ] {
            #expect(lines.contains(expected), "storefs@.service lacks \(expected)")
        }
        // Any of these gives the service its own mount namespace: the mount would not reach the host.
        for setting in [
            "ProtectSystem=", "ProtectHome=", "PrivateTmp=", "PrivateDevices=", "PrivateMounts=", "ReadWritePaths=",
            "ReadOnlyPaths=", "InaccessiblePaths=", "ProtectKernelTunables=", "ProtectControlGroups="
        ] {
            #expect(!lines.contains { $0.hasPrefix(setting) }, "storefs@.service must not set \(setting)")
        }
    }
}
