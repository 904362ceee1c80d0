import Foundation
import FuseKit
import ObjectGraph

/// A link in a to-many folder to one of its members (`projects/p2 -> ../../../Project/p2`). Its
/// target depends only on the object, so one inode serves every folder the object is listed in.
/// `ln -s` and `rm` of such links are the to-many folder's (``ToManyFolder``).
struct MemberLink: ObjectLink {
    var levelsUp: Int { 3 }

    /// `rm` of a member: the folder says what that does (a to-many removes the member).
    func remove(_ node: Node, named name: String, from folder: Node, by request: RequestContext, in mapping: Mapping)
        throws(FileSystemError)
    { try folder.kind.type.removeMember(node.object, named: name, in: folder, by: request, in: mapping) }

    /// `ln -sf`'s temporary link, which already became this member, renamed onto its name.
    func rename(_ node: Node, named name: String, to newName: String, in folder: Node, in mapping: Mapping)
        throws(FileSystemError)
    {
        guard mapping.session.scratch.aliased(name, in: folder) != nil else {
            mapping.logger.error(
                "mv \(name) \(newName) in \(mapping.describe(folder)): relationships are changed with ln -s and rm")
            throw .notPermitted
        }
        try mapping.renameAlias(name, to: newName, in: folder, shownAs: node.key.description)
    }
}
