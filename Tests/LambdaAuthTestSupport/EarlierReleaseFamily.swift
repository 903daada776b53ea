import Crypto
import LambdaAuth

/// A refresh-token family as the release before refresh families wrote it: the session item has no
/// `familyKey` or `liveGeneration`, and each token is a format-1 keyed token
/// (`01 | len | userId | len | tokenId | secret`) with its own REFRESH# item (ACTIVE or USED, no
/// generation). Built by turning a family the current release opened back into that shape, so the
/// migration tests start from exactly what a deployed store holds.
public struct EarlierReleaseFamily {
    public let userID: String
    public let sessionID: String
    public let table: any Table

    /// Rewrites the session `sessionID` of `userID` as the earlier release kept it, dropping the
    /// current release's token items of the family.
    public init(rewriting table: any Table, userID: String, sessionID: String) throws {
        self.userID = userID
        self.sessionID = sessionID
        self.table = table
        let sessionKey = TableKey(pk: "USER#\(userID)", sk: "SESSION#\(sessionID)")
        guard var session = try table.getItem(sessionKey) else { throw TableError.invalidRequest("no session \(sessionID)") }
        session["familyKey"] = nil
        session["liveGeneration"] = nil
        try table.putItem(session, condition: nil, attributes: .init())
        let tokens = try table.query(QueryRequest(
            keyCondition: "PK = :pk AND begins_with(SK, :prefix)",
            attributes: ExpressionAttributes(values: [":pk": .s("USER#\(userID)"), ":prefix": .s("REFRESH#")]))).items
        for item in tokens where item["familyId"]?.stringValue == sessionID {
            try table.deleteItem(TableKey(pk: item["PK"]!.stringValue!, sk: item["SK"]!.stringValue!), condition: nil, attributes: .init())
        }
    }

    /// Puts a format-1 token of the family, as the earlier release stored it, and returns the token.
    /// `usedAt`: a USED token (the earlier release kept those an hour), else ACTIVE.
    @discardableResult
    public func addToken(_ tokenID: String, secret: [UInt8], createdAt: Int64, expiresAt: Int64, usedAt: Int64? = nil) throws -> String {
        var bytes: [UInt8] = [1]
        for part in [userID, tokenID] {
            bytes.append(UInt8(part.utf8.count))
            bytes += part.utf8
        }
        let token = Base64.urlEncoded(bytes + secret)
        var item: Item = [
            "PK": .s("USER#\(userID)"), "SK": .s("REFRESH#\(tokenID)"),
            "GSI1PK": .s("REFRESH#" + SHA256.hexDigest(of: Array(token.utf8))), "GSI1SK": .s("REFRESH"),
            "secretHash": .s(SHA256.hexDigest(of: secret)),
            "familyId": .s(sessionID), "userId": .s(userID), "status": .s(usedAt == nil ? "ACTIVE" : "USED"),
            "createdAt": .s(ISO8601.format(epochSeconds: createdAt)), "expiresAt": .s(ISO8601.format(epochSeconds: expiresAt)),
            "sessionCreatedAt": .s(ISO8601.format(epochSeconds: createdAt)),
            "ttl": .n(usedAt.map { $0 + 3600 } ?? expiresAt + 86_400),
        ]
        if let usedAt {
            item["usedAt"] = .s(ISO8601.format(epochSeconds: usedAt))
            item["replacedBy"] = .s("REFRESH#replaced-by-the-earlier-release")
        }
        try table.putItem(item, condition: nil, attributes: .init())
        return token
    }
}
