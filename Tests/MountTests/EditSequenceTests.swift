import Foundation
import Testing

/// Several editors one after another in one object's folder, through the kernel with the real
/// tools: every edit a tool acknowledged (exit 0) is what the folder shows and what the store
/// holds after unmount.
///
/// What this guards: every file once showed its object's last change as its modification time.
/// `ls` made the kernel keep each file's time; `sed -i` on one file moved every sibling's time
/// without the kernel being told; vim then read another file (the kernel asked again, the time
/// was new), compared it with the kept time it had stat'ed first, took the file for changed by
/// another process, declined to write and exited 0: the edit was lost without an error. A file's
/// time is now its own (Sources/StoreFS/Writing/FileTimes.swift, docs/SEMANTICS.md).
@Suite(.serialized) struct EditSequenceTests {
    /// One sequence of shell commands on one employee's folder (`F` in the commands), and the
    /// first and last names it must leave.
    struct Sequence {
        var name: String
        var commands: [String]
        var firstName: String
        var lastName: String
    }

    /// vim's silent batch edit (`vim -es`): Vi-compatible defaults, the file rewritten in place
    /// (the test's mount is under /tmp, which vim's `backupskip` spares a backup). `-i NONE`: no
    /// viminfo written to the home folder.
    static func vimInPlace(_ file: String, _ value: String) -> String {
        "vim -i NONE -es -c '%s/.*/\(value)/' -c wq F/\(file)"
    }

    /// vim writing as it does by default on a mount outside /tmp: the file renamed to a backup
    /// (`name~`), a new file made, written and fsynced, the backup removed. `-N` gives Vim's
    /// defaults (backupcopy=auto: vim probes the folder with a file `4913` and then renames);
    /// `backupcopy=no` renames without the probe. `backupskip=` since the mount is under /tmp.
    static func vimRenamingBackup(_ file: String, _ value: String, judged: Bool = false) -> String {
        let options = judged ? "set backupskip=" : "set backupcopy=no writebackup backupskip="
        return "vim -i NONE -es -N -c '\(options)' -c '%s/.*/\(value)/' -c wq F/\(file)"
    }

    /// The sample store's employee folders that are folders (the managers among them are links
    /// to Manager's).
    static func employeeFolders(_ mount: MountedStore) throws -> [String] {
        try run("ls", ["-l", "\(mount.path)/Employee"]).lines.filter { $0.hasPrefix("d") }.compactMap {
            $0.split(separator: " ").last.map(String.init)
        }
    }

    static func sed(_ file: String, _ value: String) -> String { "sed -i 's/.*/\(value)/' F/\(file)" }

    static let sequences: [Sequence] = [
        // The sequence that lost vim's edit.
        .init(
            name: "ls, sed -i, vim -es on another file",
            commands: ["ls F", sed("firstName", "Sedded"), vimInPlace("lastName", "Vimmed")],
            firstName: "Sedded", lastName: "Vimmed"),
        .init(
            name: "ls, sed -i, vim renaming a backup",
            commands: ["ls F", sed("firstName", "Sedded"), vimRenamingBackup("lastName", "Renamed")],
            firstName: "Sedded", lastName: "Renamed"),
        .init(
            name: "ls, sed -i, vim with Vim's defaults",
            commands: ["ls -l F", sed("firstName", "Sedded"), vimRenamingBackup("lastName", "Defaulted", judged: true)],
            firstName: "Sedded", lastName: "Defaulted"),
        .init(
            name: "ls, sed -i twice on one file, vim on another",
            commands: ["ls F", sed("firstName", "Once"), sed("firstName", "Twice"), vimInPlace("lastName", "Vimmed")],
            firstName: "Twice", lastName: "Vimmed"),
        .init(
            name: "ls, sed -i on one file then another, vim on the first",
            commands: [
                "ls F", sed("firstName", "Sedded"), sed("lastName", "SeddedToo"), vimInPlace("firstName", "Vimmed")
            ],
            firstName: "Vimmed", lastName: "SeddedToo"),
        .init(
            name: "ls, sed -i, echo > another, vim on the first, vim renaming on the other",
            commands: [
                "ls F", sed("firstName", "Sedded"), "echo Echoed > F/lastName", vimInPlace("firstName", "Vimmed"),
                vimRenamingBackup("lastName", "Renamed")
            ],
            firstName: "Vimmed", lastName: "Renamed"),
        .init(
            name: "ls, vim renaming, vim -es on the other, sed -i on the first",
            commands: [
                "ls F", vimRenamingBackup("firstName", "Renamed"), vimInPlace("lastName", "Vimmed"),
                sed("firstName", "Sedded")
            ],
            firstName: "Sedded", lastName: "Vimmed")
    ]

    @Test func everyAcknowledgedEditInAFolderIsKept() throws {
        let mount = try MountedStore(objects: 1_000)
        defer { try? mount.unmount() }
        let folders = try Self.employeeFolders(mount)
        try #require(folders.count >= Self.sequences.count, "the sample store has too few employees: \(folders)")
        for (sequence, folder) in zip(Self.sequences, folders) {
            let path = "\(mount.path)/Employee/\(folder)"
            for command in sequence.commands {
                let line = command.replacingOccurrences(of: "F/", with: "\(path)/").replacingOccurrences(
                    of: " F", with: " \(path)")
                let result = try sh(line)
                #expect(result.status == 0, "\(sequence.name): \(line): \(result.error)")
            }
            #expect(try run("cat", ["\(path)/firstName"]).output == sequence.firstName + "\n", "\(sequence.name)")
            #expect(try run("cat", ["\(path)/lastName"]).output == sequence.lastName + "\n", "\(sequence.name)")
            #expect(
                try run("ls", ["-a", path]).lines.filter { $0.hasSuffix("~") || $0.hasPrefix("sed") || $0 == "4913" }
                    .isEmpty, "\(sequence.name): no backup or scratch file is left")
        }
        try mount.unmount()
        for (sequence, folder) in zip(Self.sequences, folders) {
            let key = folder.dropFirst()
            let stored = try run(
                "sqlite3",
                [
                    "-batch", "-separator", "|", mount.store.path,
                    "select ZFIRSTNAME, ZLASTNAME from ZPERSON where Z_PK=\(key)"
                ])
            #expect(
                stored.output == "\(sequence.firstName)|\(sequence.lastName)\n",
                "\(sequence.name): sqlite3 after unmount")
        }
    }

    /// What vim checks, as `stat` shows it: a sibling's save leaves a file's modification and
    /// change times where they were; its own save moves them.
    @Test func aSiblingsSaveLeavesAFilesTimesAlone() throws {
        let mount = try MountedStore(objects: 1_000)
        defer { try? mount.unmount() }
        let folder = "\(mount.path)/Employee/\(try #require(try Self.employeeFolders(mount).first))"
        func times(_ file: String) throws -> String {
            let result = try run("stat", ["-c", "%y %z", "\(folder)/\(file)"])
            try #require(result.status == 0, "stat \(file): \(result.error)")
            return result.output
        }
        #expect(try run("ls", [folder]).status == 0)
        let before = try times("lastName")
        // A file read and closed: the kernel asks for its attributes again (as it did between
        // vim's read and its write), so a stat shows what the mount answers, not what `ls` kept.
        func afterARead(_ file: String) throws -> String {
            #expect(try run("cat", ["\(folder)/\(file)"]).status == 0)
            return try times(file)
        }
        #expect(try sh("sed -i 's/.*/Sedded/' \(folder)/firstName").status == 0)
        #expect(try afterARead("lastName") == before, "sed -i on a sibling moved the file's times")
        #expect(try sh("echo 'https://example.org/' > \(folder)/homepage").status == 0)
        #expect(try afterARead("lastName") == before, "echo > a sibling moved the file's times")
        #expect(try afterARead("firstName") != before, "the saved file shows its save")
        #expect(
            try sh(Self.vimInPlace("lastName", "Vimmed").replacingOccurrences(of: "F/", with: "\(folder)/")).status == 0
        )
        #expect(try afterARead("lastName") != before, "vim's save shows")
        #expect(try run("cat", ["\(folder)/lastName"]).output == "Vimmed\n")
    }

    /// The rename pattern really is what vim does here (else the sequences above would test the
    /// in-place write again): strace sees the file renamed to its backup, with Vim's defaults and
    /// with backupcopy=no.
    @Test func vimRenamesItsBackupOnTheMount() throws {
        let mount = try MountedStore(objects: 1_000)
        defer { try? mount.unmount() }
        let folder = "\(mount.path)/Employee/\(try #require(try Self.employeeFolders(mount).first))"
        for (file, judged) in [("firstName", true), ("lastName", false)] {
            let trace = mount.directory.appendingPathComponent("vim-\(file).strace").path
            let vim = Self.vimRenamingBackup(file, "Renamed", judged: judged).replacingOccurrences(
                of: "F/", with: "\(folder)/")
            let result = try sh("strace -f -qq -e trace=rename,renameat,renameat2 -o \(trace) \(vim)")
            #expect(result.status == 0, "\(vim): \(result.error)")
            let calls = (try? String(contentsOfFile: trace, encoding: .utf8)) ?? ""
            #expect(calls.contains("/\(file)~\") = 0"), "\(vim) did not rename the file to its backup:\n\(calls)")
            #expect(try run("cat", ["\(folder)/\(file)"]).output == "Renamed\n")
        }
    }
}
