import ArgumentParser
import Foundation
import ObjectGraph
import StoreFS

#if canImport(Glibc)
    import Glibc
#endif

/// `storefs overlay export MOUNTPOINT`: the changes an evidence mount holds, as a patch.
struct Overlay: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Work with the overlay of an evidence mount (storefs mount -o evidence).",
        subcommands: [Export.self])

    struct Export: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the changes an evidence mount holds, as a patch for storefs apply.",
            discussion: """
                Commits what is pending in the mount (as fsync of its root does), then prints the \
                overlay's changes as JSON on standard output: every object inserted, updated (with \
                each changed value before and after) and deleted, changed to-many relationships, \
                metadata keys, the store's UUID and the files the store was read from with their \
                SHA-256. `storefs apply PATCH COPY` replays it on a copy of the store. Exit status 1 \
                when some edits of the mount could not be saved into the overlay (the model refused \
                them): the patch lists them under "unsaved", without their values.
                """)

        @Argument(help: "The mount point of an evidence mount.")
        var mountPoint: String

        func run() throws {
            // Everything the mount holds goes into the overlay first: fsync of the root commits.
            let fd = open(mountPoint, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            guard fd >= 0 else { throw ValidationError("\(mountPoint): \(String(cString: strerror(errno)))") }
            let synced = fsync(fd) == 0 ? 0 : errno
            close(fd)
            let file: String
            switch ExtendedAttribute.value(EvidenceStore.overlayName, at: mountPoint) {
            case .success(let value): file = String(decoding: value, as: UTF8.self)
            case .failure(let error) where error.code == .ENODATA || error.code == .EOPNOTSUPP:
                throw ValidationError(
                    "\(mountPoint) is not an evidence mount (storefs mount -o evidence STORE \(mountPoint))")
            case .failure(let error):
                throw ValidationError(
                    "\(mountPoint): reading \(EvidenceStore.overlayName) failed: \(String(cString: strerror(error.code.rawValue)))"
                )
            }
            var output = StandardOutput()
            output.buffer.append(contentsOf: try RegularFile.read(URL(fileURLWithPath: file), as: "patches"))
            try output.flush()
            let patch = try OverlayPatch.read(URL(fileURLWithPath: file))
            if synced != 0 {
                printError(
                    "storefs overlay export: committing \(mountPoint) failed (\(String(cString: strerror(synced)))); the patch holds what the overlay had"
                )
                throw ExitCode(1)
            }
            if !patch.unsaved.isEmpty {
                printError(
                    "storefs overlay export: \(patch.unsaved.count) changes of the mount could not be saved into the overlay and are not in the patch: "
                        + patch.unsaved.prefix(5).map { "\($0.object) (\($0.reason))" }.joined(separator: "; "))
                throw ExitCode(1)
            }
        }
    }
}
