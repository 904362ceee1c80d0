import FuseKit
import ObjectGraph

/// What an inode names: a kind of node and the numbers that kind reads (most name an object and
/// one of its properties). The inode number encodes it completely, so storefs keeps no inode table
/// and numbers survive the kernel's forgets: kind in bits 60–63, bits 54–59 left to a mount of a
/// folder of stores (which store) and to ``StoreVersionsFileSystem`` (which of the WAL's versions),
/// entity in 44–53, property index in 32–43, primary key in 0–31.
/// A scratch file's serial number takes bits 0–53.
///
/// Limits that follow: 1,023 entities, 4,095 properties per entity, keys below 2^32. Property
/// indexes are positions in `allAttributes` / `allRelationships`, where inherited properties come
/// first, so a subentity's inherited property has its parent's index.
///
/// What a node does is its kind's (``NodeType``, one type per kind in this folder); this type only
/// encodes and decodes.
struct Node: Hashable, Sendable {
    /// The kinds of node, by the code their inode numbers carry (a code does not change once
    /// given: the kernel may hold numbers across a restart of the server). Inode numbers have room
    /// for 16 codes and all are taken: a new kind joins a family and shares its code, saying which
    /// member it is in a field the family does not otherwise use (``code``; the decoder maps it
    /// back), and registers its type in ``Node/Kind/type``.
    ///
    /// Codes 7 and 12 changed once (issue 37): they were the subentity link's and the template
    /// member link's, which now share the member link's code 6 (a member number in the property
    /// field), so that the recovered records and the timeline could have a family each. Numbers a
    /// kernel kept from a server before that change name other nodes.
    enum Kind: UInt8, CaseIterable, Sendable {
        case root = 0, entity, object, attribute, toOne, toMany, member
        /// `.recovered` (``RecoveredFolder``); the rest of the family (recovered entity folders,
        /// records, their files and links, and `.wal`) shares code 7, which part in the entity bits.
        case recovered = 7
        case scratch = 8, fetched, templates, template
        /// `.timeline` (``TimelineFolder``); its year, month and day folders and links share code
        /// 12, which part in the property field.
        case timeline = 12
        case rendering = 13, query
        /// The persistent history's folder (``HistoryNode``). The rest of its tree shares code 15
        /// (which part of the tree in the entity bits) but has kinds of its own, below.
        case history = 15
        /// The files of the query family (a query folder's `.count`, `.json`, `.jsonl`, `.csv`): they carry
        /// code 14 with ``queryFileFlag`` in the property field, and never their own code.
        case queryFile = 16
        /// The history's transaction folders, their files, change folders, links, tombstone
        /// folders and tombstone values: code 15 in inode numbers.
        case historyTransaction = 17, historyField, historyChanges, historyLink, historyTombstone, historyValue
        /// Links to an object that are not in a to-many folder: a subentity's object listed in its
        /// ancestor's entity folder, an object in a fetch request template's folder. Code 6, with
        /// ``MemberKind`` in the property field.
        case subentityLink = 23, templateMember
        /// The recovered family's other parts (``RecoveredNode``): code 7.
        case recoveredEntity = 25, recoveredRecord, recoveredAttribute, recoveredRendering, recoveredLink, walFolder,
            walVersion
        /// The timeline's year, month and day folders and its links (``TimelineNode``): code 12.
        case timelineYear = 40, timelineMonth, timelineDay, timelineLink
        /// A composite attribute's folder in an object folder (``CompositeFolder``): code 3, the
        /// attribute's, with ``compositeFolderFlag`` in the property field and the composite's
        /// place in the entity's `compositePaths` below it. Its element files are attribute nodes.
        case compositeFolder = 50

        /// The code inode numbers carry: a family of kinds shares its first kind's.
        var code: UInt8 {
            switch self {
            case .queryFile: Kind.query.rawValue
            case .historyTransaction, .historyField, .historyChanges, .historyLink, .historyTombstone, .historyValue:
                Kind.history.rawValue
            case .subentityLink, .templateMember: Kind.member.rawValue
            case .compositeFolder: Kind.attribute.rawValue
            case .recoveredEntity, .recoveredRecord, .recoveredAttribute, .recoveredRendering, .recoveredLink,
                .walFolder, .walVersion:
                Kind.recovered.rawValue
            case .timelineYear, .timelineMonth, .timelineDay, .timelineLink: Kind.timeline.rawValue
            default: rawValue
            }
        }
    }

    /// Which link to an object a node of code 6 is, in its property field.
    enum MemberKind: Int {
        case member = 0, subentityLink, templateMember

        var kind: Kind {
            switch self {
            case .member: .member
            case .subentityLink: .subentityLink
            case .templateMember: .templateMember
            }
        }
    }

    /// Bit 11 of the property field: a query node (code 14) that is a file, not a folder.
    static let queryFileFlag = 0x800
    /// Bit 11 of the property field: an attribute node (code 3) that is a composite's folder.
    /// Attribute files therefore take indexes below 2,048 (SQLite's default limit is 2,000
    /// columns a table).
    static let compositeFolderFlag = 0x800
    static let maximumAttributeFiles = compositeFolderFlag

    let kind: Kind
    let entity: EntityID
    /// A property index (attribute, relationship, fetched property, template), by kind.
    let property: Int
    /// A primary key, or a scratch file's serial number.
    let key: PrimaryKey

    private init(_ kind: Kind, entity: EntityID = EntityID(0), property: Int = 0, key: PrimaryKey = PrimaryKey(0)) {
        self.kind = kind
        self.entity = entity
        self.property = property
        self.key = key
    }

    private init(_ kind: Kind, _ object: ObjectID, property: Int = 0) {
        self.init(kind, entity: object.entity, property: property, key: object.key)
    }

    // MARK: - The nodes of each kind

    static let root = Node(Kind.root)
    /// An entity's directory.
    static func entity(_ id: EntityID) -> Node { Node(.entity, entity: id) }
    /// An object's folder, in its own entity's directory.
    static func object(_ id: ObjectID) -> Node { Node(.object, id) }
    /// An attribute file in an object folder, by the attribute's index.
    static func attribute(_ id: ObjectID, _ index: Int) -> Node { Node(.attribute, id, property: index) }
    /// A composite attribute's folder in an object folder (or, nested, in its composite's folder),
    /// by the composite's place in the entity's `compositePaths`.
    static func compositeFolder(_ id: ObjectID, _ index: Int) -> Node {
        Node(.compositeFolder, id, property: compositeFolderFlag | (index & (compositeFolderFlag - 1)))
    }
    /// The composite's place in the entity's `compositePaths` (for a composite folder node).
    var compositeIndex: Int { property & (Self.compositeFolderFlag - 1) }
    /// A to-one relationship's symlink in an object folder.
    static func toOne(_ id: ObjectID, _ index: Int) -> Node { Node(.toOne, id, property: index) }
    /// A to-many relationship's folder in an object folder.
    static func toMany(_ id: ObjectID, _ index: Int) -> Node { Node(.toMany, id, property: index) }
    /// A symlink inside a to-many folder, pointing at this object; its target depends only on the
    /// object, so one inode serves every folder the object is listed in.
    static func member(_ id: ObjectID) -> Node { Node(.member, id) }
    /// A symlink in an ancestor entity's directory to a subentity object's folder.
    static func subentityLink(_ id: ObjectID) -> Node {
        Node(.subentityLink, id, property: MemberKind.subentityLink.rawValue)
    }
    /// A scratch file (an editor's temporary file) or link, by serial number.
    static func scratch(_ serial: UInt64) -> Node { Node(.scratch, key: PrimaryKey(Int64(serial & serialMask))) }
    /// A fetched property's read-only folder of links in an object folder.
    static func fetched(_ id: ObjectID, _ index: Int) -> Node { Node(.fetched, id, property: index) }
    /// The folder of the model's fetch request templates at the mount root (`.fetchRequests`).
    static let templates = Node(.templates)
    /// One fetch request template's read-only folder of links.
    static func template(_ index: Int) -> Node { Node(.template, property: index) }
    /// A link in a template's folder to this object (`../../Entity/pN`).
    static func templateMember(_ id: ObjectID) -> Node {
        Node(.templateMember, id, property: MemberKind.templateMember.rawValue)
    }
    /// The read-only rendering of a value beside its attribute file (`ATTR.json`, `ATTR.pb.txt`):
    /// the attribute's index in the property field's low 9 bits, the rendering's (its position in
    /// ``ValueRendering/all``) in the top 3.
    static func rendering(_ id: ObjectID, _ index: Int, _ renderer: Int = 0) -> Node {
        Node(.rendering, id, property: renderer << renderingShift | index)
    }
    /// A node of the persistent history (``HistoryNode``): `part` in the entity bits.
    static func history(_ part: HistoryNode.Part, property: Int = 0, key: Int64 = 0) -> Node {
        Node(part.kind, entity: EntityID(part.rawValue), property: property, key: PrimaryKey(key))
    }

    /// A node of the recovered family (``RecoveredNode``): `part` in the entity bits.
    static func recovered(_ part: RecoveredNode.Part, property: Int = 0, key: Int64 = 0) -> Node {
        Node(part.kind, entity: EntityID(part.rawValue), property: property, key: PrimaryKey(key))
    }

    /// A node of the timeline (``TimelineNode``): `part` in the property field's low bits.
    static func timeline(_ part: TimelineNode.Part, entity: EntityID = EntityID(0), key: Int64 = 0) -> Node {
        Node(part.kind, entity: entity, property: part.rawValue, key: PrimaryKey(key))
    }

    /// A node of the query family (``QueryFolder``, ``QueryResultFile``): `part` says which node
    /// (below ``queryFileFlag``), `index` which query of the mount's ``QueryTable``.
    static func query(_ part: Int, entity: EntityID = EntityID(0), index: UInt32 = 0) -> Node {
        Node(.query, entity: entity, property: part & (queryFileFlag - 1), key: PrimaryKey(Int64(index)))
    }
    /// A file of a query folder, by `part`.
    static func queryFile(_ part: Int, entity: EntityID, index: UInt32) -> Node {
        Node(
            .queryFile, entity: entity, property: queryFileFlag | (part & (queryFileFlag - 1)),
            key: PrimaryKey(Int64(index)))
    }

    /// The object the node names or sits with (meaningful for the kinds that have one).
    var object: ObjectID { ObjectID(entity: entity, key: key) }
    /// A scratch node's serial number.
    var serial: UInt64 { UInt64(bitPattern: key.rawValue) & Self.serialMask }

    // MARK: - Inode numbers

    private static let keyBits: UInt64 = 32
    private static let propertyBits: UInt64 = 12
    private static let entityBits: UInt64 = 10
    private static let entityShift: UInt64 = keyBits + propertyBits
    static let maximumKey: Int64 = (1 << 32) - 1
    /// A rendering's property field: attribute index below 512, renderer above.
    static let renderingShift = 9
    static let maximumRenderedAttributes = 1 << renderingShift
    /// A tombstone value's attribute index takes the property field.
    static let maximumHistoryAttributes = 1 << propertyBits
    /// Bits 54–59: free for ``StoreFolderFileSystem`` to say which store an inode belongs to.
    static let slotShift: UInt64 = 54
    static let slotMask: UInt64 = 0x3F << 54
    private static let serialMask: UInt64 = (1 << slotShift) - 1

    var inode: InodeNumber {
        if kind == .root { return .root }
        if kind == .scratch { return InodeNumber((UInt64(kind.rawValue) << 60) | serial) }
        return InodeNumber(
            (UInt64(kind.code) << 60) | (UInt64(entity.rawValue) << Self.entityShift)
                | (UInt64(property) << Self.keyBits)
                | UInt64(key.rawValue))
    }

    init?(_ inode: InodeNumber) {
        let raw = inode.rawValue
        if inode == .root {
            self = .root
            return
        }
        guard let kind = Kind(rawValue: UInt8(raw >> 60)), kind != .root else { return nil }
        if kind == .scratch {
            self = .scratch(raw & Self.serialMask)
            return
        }
        let property = Int((raw >> Self.keyBits) & ((1 << Self.propertyBits) - 1))
        let entity = Int((raw >> Self.entityShift) & ((1 << Self.entityBits) - 1))
        var member = kind
        if kind == .query && property & Self.queryFileFlag != 0 { member = .queryFile }
        if kind == .attribute && property & Self.compositeFolderFlag != 0 { member = .compositeFolder }
        if kind == .history {
            guard let part = HistoryNode.Part(rawValue: entity) else { return nil }
            member = part.kind
        }
        if kind == .member {
            guard let memberKind = MemberKind(rawValue: property) else { return nil }
            member = memberKind.kind
        }
        if kind == .recovered {
            guard let part = RecoveredNode.Part(rawValue: entity) else { return nil }
            member = part.kind
        }
        if kind == .timeline {
            guard let part = TimelineNode.Part(rawValue: property) else { return nil }
            member = part.kind
        }
        self.init(
            member, entity: EntityID(entity), property: property,
            key: PrimaryKey(Int64(raw & ((1 << Self.keyBits) - 1))))
    }

    /// Whether an object with `key` can be shown (keys from 1 to 2^32 - 1).
    static func fits(_ key: PrimaryKey) -> Bool { key.rawValue >= 1 && key.rawValue <= maximumKey }

    /// Whether the node's numbers fit the encoding (keys below 2^32, few enough entities and
    /// properties).
    static func fits(_ id: ObjectID, property: Int = 0) -> Bool {
        id.key.rawValue >= 0 && id.key.rawValue <= maximumKey && id.entity.rawValue < (1 << entityBits)
            && property >= 0 && property < (1 << propertyBits)
    }

    // MARK: - Questions about the node

    /// The kinds that sit in an object folder (or are it), and so belong to its object.
    private static let objectFolderKinds: Set<Kind> = [
        .object, .attribute, .toOne, .toMany, .rendering, .compositeFolder
    ]

    /// The object whose folder holds this node (or that it is), if any.
    var owner: ObjectID? { Self.objectFolderKinds.contains(kind) ? object : nil }

    /// Whether this is an object folder or one of its to-many folders (where scratch files live).
    var isFolderOfObject: Bool { kind == .object || kind == .toMany || kind == .compositeFolder }
}
