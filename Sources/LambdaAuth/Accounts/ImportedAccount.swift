import Crypto

/// A user brought from another system (`authctl users import`, contract section 24), written as
/// the items a sign-in would have written for it, minus the session: the PROFILE, both sides of
/// each identity's link and the claim on its verified email. Everything here comes from the
/// export itself (no clock, no randomness), so importing one export twice builds the same bytes.
package struct ImportedAccount: Sendable {
    package struct Identity: Sendable, Equatable {
        package var provider: ProviderName
        package var subject: String
        package var email: String?

        package init(provider: ProviderName, subject: String, email: String?) {
            self.provider = provider
            self.subject = subject
            self.email = email
        }
    }

    /// Where the user came from: `appMetadata.importedFrom`.
    package var system: String
    package var sourceID: String
    package var email: String?
    package var emailVerified: Bool
    package var displayName: String?
    package var pictureURL: String?
    package var createdAt: Int64
    package var lastSignInAt: Int64?
    package var identities: [Identity]

    package init(system: String, sourceID: String, email: String?, emailVerified: Bool, displayName: String?, pictureURL: String?,
                 createdAt: Int64, lastSignInAt: Int64?, identities: [Identity]) {
        self.system = system
        self.sourceID = sourceID
        self.email = email
        self.emailVerified = emailVerified
        self.displayName = displayName
        self.pictureURL = pictureURL
        self.createdAt = createdAt
        self.lastSignInAt = lastSignInAt
        self.identities = identities
    }

    /// Derived from the old id, not drawn: a rerun (after a kill, or a second run) names the same
    /// user, so its conditions recognise what is there without any progress file, and an operator
    /// finds the user by its old id alone. Formatted as every user id (26 lowercase base32).
    package static func userID(system: String, sourceID: String) -> String {
        let digest = SHA256.hash(data: Array("lambda-auth-import-v1\u{0}\(system)\u{0}\(sourceID)".utf8))
        return Base32.encode(Array(Array(digest).prefix(16))).lowercased()
    }

    package var userID: String { ImportedAccount.userID(system: system, sourceID: sourceID) }

    package var importedFrom: JSONValue { ["system": .string(system), "id": .string(sourceID)] }

    /// The key of the email claim: verified and keyable addresses only, as sign-in claims them.
    package var emailClaim: String? { emailVerified ? email.flatMap(EmailKey.of) : nil }

    /// Every key the user's transaction writes: two users of one batch must not share one.
    package var keys: [TableKey] {
        var keys = [Keys.profileKey(userID)]
        for identity in identities {
            keys.append(Keys.identityLink(identity.provider, identity.subject))
            keys.append(Keys.userIdentity(userID, identity.provider, subject: identity.subject))
        }
        if let emailClaim { keys.append(Keys.email(emailClaim)) }
        return keys
    }

    /// How many items `actions` writes, without building them.
    package var itemCount: Int { 1 + 2 * identities.count + (emailClaim == nil ? 0 : 1) }

    /// The user as sign-in's creation writes it, with no session: version 1, its identities
    /// counted, `appMetadata.importedFrom` set.
    var profile: UserProfile {
        var profile = UserProfile(userID: userID, email: email, emailVerified: emailVerified, displayName: displayName,
                                  pictureURL: pictureURL, now: createdAt)
        profile.lastSignInAt = lastSignInAt ?? createdAt
        profile.identityCount = Int64(identities.count)
        profile.version = 1
        profile.appMetadata = ["importedFrom": importedFrom]
        return profile
    }

    /// One transaction, each action conditional on its item not existing: it commits the whole user
    /// or nothing (a kill never leaves half of one), and on a rerun the profile's condition is
    /// what says "already here". Action order: `ImportedAccount.Conflict.of` reads reasons by it.
    package var actions: [TransactWriteAction] {
        let userID = userID
        var actions: [TransactWriteAction] = [.put(profile.item, condition: "attribute_not_exists(PK)")]
        for identity in identities {
            let linked = LinkedIdentity(provider: identity.provider, subject: identity.subject, email: identity.email, linkedAt: createdAt)
            actions.append(.put(linked.linkItem(userID: userID), condition: "attribute_not_exists(PK)"))
            actions.append(.put(linked.userSideItem(userID: userID), condition: "attribute_not_exists(PK)"))
        }
        if let emailClaim {
            actions.append(.put(AccountStore.emailClaimItem(emailClaim, userID: userID), condition: "attribute_not_exists(PK)"))
        }
        return actions
    }

    /// Why a user's transaction did not commit, read from its reasons and settled by strongly
    /// consistent reads of the items in the way.
    package enum Conflict: Sendable, Equatable {
        /// This import (or an earlier run of it) wrote the user already.
        case alreadyPresent
        /// Some other user has the id: never by chance (128 bits of a hash); reported, not overwritten.
        case userIDTaken
        case identityHeld(provider: ProviderName, subject: String, by: String)
        case emailClaimed(String, by: String)
        /// Nothing in the way any more (a conflicting write was undone meanwhile): try again.
        case none

        /// `reasons`: one per action of `account.actions`, in that order.
        package static func of(_ account: ImportedAccount, reasons: [CancellationReason], table: any Table) throws(TableError) -> Conflict {
            func failed(_ index: Int) -> Bool { index < reasons.count && reasons[index].code == CancellationReason.conditionalCheckFailed.code }
            let everyIndex = reasons.isEmpty
            if everyIndex || failed(0), let profile = try table.getItem(Keys.profileKey(account.userID)) {
                let metadata = AppMetadata.read(profile["appMetadata"]?.stringValue)
                return metadata["importedFrom"] == account.importedFrom ? .alreadyPresent : .userIDTaken
            }
            for (offset, identity) in account.identities.enumerated() where everyIndex || failed(1 + 2 * offset) || failed(2 + 2 * offset) {
                if let holder = try table.getItem(Keys.identityLink(identity.provider, identity.subject))?["userId"]?.stringValue,
                   holder != account.userID {
                    return .identityHeld(provider: identity.provider, subject: identity.subject, by: holder)
                }
            }
            if let claim = account.emailClaim, everyIndex || failed(reasons.count - 1),
               let owner = try table.getItem(Keys.email(claim))?["userId"]?.stringValue, owner != account.userID {
                return .emailClaimed(claim, by: owner)
            }
            return .none
        }
    }
}
