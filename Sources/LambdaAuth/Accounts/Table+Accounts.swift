extension RefreshTokenRecord {
    static let usedVisibility: Int64 = 3600
    static let revokedVisibility: Int64 = 86_400
    static let expiredVisibility: Int64 = 86_400
}

/// What a table failure means to a caller of the contract. The tables themselves are generic and
/// know nothing of the contract's codes; this is where the product gives their failures one.
extension TableError: AuthErrorConvertible {
    public var authError: AuthError {
        switch self {
        case .unavailable, .corrupted:
            return AuthError(.storeUnavailable, "the user store is unavailable", detail: description)
        case .misconfigured(let reason):
            return AuthError(.configError, reason)
        case .conditionFailed, .transactionCanceled, .invalidRequest:
            // The flows handle expected conflicts themselves; one that escapes them is a bug.
            return .internalError(description)
        }
    }
}

/// Where the account layer meets the generic table: pagination followed, and table failures turned
/// into the contract's errors (the table itself knows nothing of the contract's codes).
extension Table {
    /// Every item of a query, following pagination; table errors become the contract's.
    func queryAll(_ request: QueryRequest) throws(AuthError) -> [Item] {
        var request = request
        var items: [Item] = []
        do {
            while true {
                let page = try query(request)
                items += page.items
                guard let next = page.lastEvaluatedKey else { return items }
                request.exclusiveStartKey = next
            }
        } catch {
            throw error.authError
        }
    }

    func read(_ key: TableKey) throws(AuthError) -> Item? {
        do {
            return try getItem(key)
        } catch {
            throw error.authError
        }
    }

    /// Runs a transaction; a cancellation comes back as its reasons (one per action) for the flow to
    /// interpret, every other failure as the contract's error.
    func transact(_ actions: [TransactWriteAction]) throws(AuthError) -> [CancellationReason]? {
        do {
            try transactWrite(actions)
            return nil
        } catch .transactionCanceled(let reasons) {
            return reasons
        } catch {
            throw error.authError
        }
    }
}
