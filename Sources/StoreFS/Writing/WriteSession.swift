import Foundation
import ObjectGraph
import Synchronization

/// The write path's parts, each with its own state and lock: files open for writing and their
/// buffers, editors' scratch files, the copy-in session, removals not applied yet, when to
/// commit, what could not be committed, and when each value's file last changed. The commit
/// itself, which needs the engine and the kernel, is ``Mapping``'s (Writing/Mapping+Commit.swift).
///
/// Threading: each part has its own lock and never calls out while holding it; `commitLock` is
/// held across a whole commit, so that one runs at a time.
final class WriteSession: Sendable {
    let openFiles = OpenFiles()
    let scratch = ScratchFiles()
    let copyIn = CopyInSession()
    let removals = RemovalLog()
    let schedule = CommitSchedule()
    let failures = CommitFailures()
    /// The modification time each value's file and to-many folder shows (its own, not its object's).
    let fileTimes = FileTimes()
    /// One commit at a time; held across the save.
    let commitLock = Mutex(())
    /// What the last unmount left unsaved (nil: everything was saved).
    let unsaved = Mutex<UnsavedChanges?>(nil)
}
