import Foundation
import FuseKit
import ObjectGraph

/// A link in a fetch request template's folder to an object it fetches
/// (`.fetchRequests/remoteEmployees/p12 -> ../../Employee/p12`).
struct TemplateMemberLink: ObjectLink {
    var levelsUp: Int { 2 }
}
