import Foundation
import FuseKit
import ObjectGraph

/// A link in an ancestor entity's directory to a subentity object's folder
/// (`Person/p6 -> ../Employee/p6`): the object is one of the ancestor's too.
struct SubentityLink: ObjectLink {
    var levelsUp: Int { 1 }
}
