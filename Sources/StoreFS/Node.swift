import FuseKit
import ObjectGraph

/// What an inode names. The inode number encodes it completely, so storefs keeps no inode table
/// and numbers survive the kernel's forgets: kind in bits 60–63, bits 54–59 left to a mount of a
/// folder of stores (which store), entity in 44–53, property index in 32–43, primary key in 0–31.
///
/// Limits that follow: 1,023 entities, 4,095 properties per entity, keys below 2^32.
/// Property indexes are positions in `allAttributes` / `allRelationships`, where inherited
/// properties come first, so a subentity's inherited property has its parent's index.
enum Node: Hashable, Sendable {
    case root
    /// An entity's directory.
    case entity(EntityID)
    /// An object's folder, in its own entity's directory.
    case object(ObjectID)
    /// An attribute file in an object folder.
    case attribute(ObjectID, Int)
    /// A to-one relationship's symlink in an object folder.
    case toOne(ObjectID, Int)
    /// A to-many relationship's folder in an object folder.
    case toMany(ObjectID, Int)
    /// A symlink inside a to-many folder, pointing at this object; its target depends only on the
    /// object, so one inode serves every folder the object is listed in.
    case member(ObjectID)
    /// A symlink in an ancestor entity's directory to a subentity object's folder.
    case subentityLink(ObjectID)
    /// A scratch file in an object folder (an editor's temporary file), by serial number.
    case scratch(UInt64)
    /// A fetched property's read-only folder of links in an object folder.
    case fetched(ObjectID, Int)
    /// The folder of the model's fetch request templates at the mount root (`.fetchRequests`).
    case templates
    /// One fetch request template's read-only folder of links.
    case template(Int)
    /// A link in a template's folder to this object (`../../Entity/pN`).
    case templateMember(ObjectID)
    /// The read-only rendering of an archived value beside its attribute file (`ATTR.json`),
    /// by the attribute's index.
    case rendering(ObjectID, Int)

    private static let keyBits: UInt64 = 32
    private static let propertyBits: UInt64 = 12
    private static let entityBits: UInt64 = 10
    private static let entityShift: UInt64 = keyBits + propertyBits
    static let maximumKey: Int64 = (1 << 32) - 1
    /// Bits 54–59: free for ``StoreFolderFileSystem`` to say which store an inode belongs to.
    static let slotShift: UInt64 = 54
    static let slotMask: UInt64 = 0x3F << 54

    private enum Kind: UInt64 {
        case entity = 1, object, attribute, toOne, toMany, member, subentityLink, scratch, fetched, templates, template,
            templateMember, rendering
    }

    var inode: InodeNumber {
        switch self {
        case .root: return .root
        case .entity(let e): return Self.encode(.entity, e.rawValue, 0, 0)
        case .object(let o): return Self.encode(.object, o.entity.rawValue, 0, o.key.rawValue)
        case .attribute(let o, let i): return Self.encode(.attribute, o.entity.rawValue, i, o.key.rawValue)
        case .toOne(let o, let i): return Self.encode(.toOne, o.entity.rawValue, i, o.key.rawValue)
        case .toMany(let o, let i): return Self.encode(.toMany, o.entity.rawValue, i, o.key.rawValue)
        case .member(let o): return Self.encode(.member, o.entity.rawValue, 0, o.key.rawValue)
        case .subentityLink(let o): return Self.encode(.subentityLink, o.entity.rawValue, 0, o.key.rawValue)
        case .scratch(let n): return InodeNumber((Kind.scratch.rawValue << 60) | (n & ((1 << Self.slotShift) - 1)))
        case .fetched(let o, let i): return Self.encode(.fetched, o.entity.rawValue, i, o.key.rawValue)
        case .templates: return Self.encode(.templates, 0, 0, 0)
        case .template(let i): return Self.encode(.template, 0, i, 0)
        case .templateMember(let o): return Self.encode(.templateMember, o.entity.rawValue, 0, o.key.rawValue)
        case .rendering(let o, let i): return Self.encode(.rendering, o.entity.rawValue, i, o.key.rawValue)
        }
    }

    init?(_ inode: InodeNumber) {
        let raw = inode.rawValue
        if inode == .root {
            self = .root
            return
        }
        guard let kind = Kind(rawValue: raw >> 60) else { return nil }
        let entity = EntityID(Int((raw >> Self.entityShift) & ((1 << Self.entityBits) - 1)))
        let property = Int((raw >> Self.keyBits) & ((1 << Self.propertyBits) - 1))
        let key = PrimaryKey(Int64(raw & ((1 << Self.keyBits) - 1)))
        let object = ObjectID(entity: entity, key: key)
        switch kind {
        case .entity: self = .entity(entity)
        case .object: self = .object(object)
        case .attribute: self = .attribute(object, property)
        case .toOne: self = .toOne(object, property)
        case .toMany: self = .toMany(object, property)
        case .member: self = .member(object)
        case .subentityLink: self = .subentityLink(object)
        case .scratch: self = .scratch(raw & ((1 << Self.slotShift) - 1))
        case .fetched: self = .fetched(object, property)
        case .templates: self = .templates
        case .template: self = .template(property)
        case .templateMember: self = .templateMember(object)
        case .rendering: self = .rendering(object, property)
        }
    }

    /// Whether an object with `key` can be shown (keys from 1 to 2^32 - 1).
    static func fits(_ key: PrimaryKey) -> Bool { key.rawValue >= 1 && key.rawValue <= maximumKey }

    /// Whether the node's numbers fit the encoding (keys below 2^32, few enough entities and
    /// properties).
    static func fits(_ id: ObjectID, property: Int = 0) -> Bool {
        id.key.rawValue >= 0 && id.key.rawValue <= maximumKey && id.entity.rawValue < (1 << entityBits)
            && property < (1 << propertyBits)
    }

    private static func encode(_ kind: Kind, _ entity: Int, _ property: Int, _ key: Int64) -> InodeNumber {
        InodeNumber(
            (kind.rawValue << 60) | (UInt64(entity) << entityShift) | (UInt64(property) << keyBits) | UInt64(key))
    }
}

extension Node {
    var isAttribute: Bool {
        if case .attribute = self { return true }
        return false
    }

    var isToManyFolder: Bool {
        if case .toMany = self { return true }
        return false
    }

    /// Whether this is an object folder or one of its to-many folders (where scratch files live).
    var isFolderOfObject: Bool {
        switch self {
        case .object, .toMany: true
        default: false
        }
    }

    /// The object whose folder holds this node, if any.
    var object: ObjectID? {
        switch self {
        case .object(let o), .attribute(let o, _), .toOne(let o, _), .toMany(let o, _), .rendering(let o, _): o
        default: nil
        }
    }
}
