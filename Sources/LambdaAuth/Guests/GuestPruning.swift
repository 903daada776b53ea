import Logging

/// `authctl users prune-guests`: what the table's TTL sweep does to expired guests, on demand,
/// for stores that have no sweeper (the local store hides expired items from reads but keeps them
/// on disk until a checkpoint rewrites their partition; moto never sweeps).
///
/// It reads the table as it physically is (through a table whose clock stands at the epoch, so
/// nothing is hidden) and decides with the real clock: every guest whose PROFILE `ttl` has passed
/// is deleted by the account deletion itself (mark, partition, profile last), and so is whatever
/// is left of a user partition that has no PROFILE any more (a guest's REVOKED session or token
/// outliving its profile by up to a day). Expired rate-limit counters go too.
public enum GuestPruning {
    public struct Report: Sendable, Equatable {
        public var expiredGuests = 0
        public var leftoverPartitions = 0
        public var expiredCounters = 0

        public var json: JSONValue {
            ["expiredGuests": .number(expiredGuests), "leftoverPartitions": .number(leftoverPartitions),
             "expiredCounters": .number(expiredCounters)]
        }
    }

    /// `store`: over the table as it physically is; `now`: the real clock's.
    static func prune(store: AccountStore, now: Int64, logger: Logger) throws(AuthError) -> Report {
        let deletion = AccountDeletion(store: store, retry: OptimisticRetry(sleeper: SystemSleeper(), random: SystemRandomSource()))
        let expired = { (profile: UserProfile) in profile.isGuest && profile.guestExpiresAt.map { $0 < now } == true }

        var profiles: [String: UserProfile] = [:]
        var partitions: Set<String> = []
        var expiredCounters: [TableKey] = []
        var start: Item?
        repeat {
            let page: QueryPage
            do {
                page = try store.table.scan(limit: nil, exclusiveStartKey: start)
            } catch {
                throw error.authError
            }
            for item in page.items {
                guard let key = TableKey(item: item) else { continue }
                if let userID = Keys.userID(partition: key.pk) {
                    partitions.insert(userID)
                    if let profile = UserProfile(item: item) { profiles[userID] = profile }
                } else if key.pk.hasPrefix(Keys.rateCounterPrefix), let ttl = item["ttl"]?.int64Value, ttl < now {
                    expiredCounters.append(key)
                }
            }
            start = page.lastEvaluatedKey
        } while start != nil

        var report = Report()
        for userID in partitions.sorted() {
            if let profile = profiles[userID] {
                guard expired(profile) else { continue }
                // Decided again on the profile as the deletion reads it: a guest upgraded or
                // refreshed since the scan is left alone.
                guard try deletion.deleteWithoutCaller(userID: userID, now: now, logger: logger, where: expired) else { continue }
                report.expiredGuests += 1
            } else {
                // No PROFILE: every item here is a leftover that no flow can reach (profiles are
                // created with a user's first items and deleted after its last ones).
                guard try store.user(userID) == nil else { continue }
                try deletion.finish(userID: userID, logger: logger)
                report.leftoverPartitions += 1
            }
        }
        try store.delete(expiredCounters)
        report.expiredCounters = expiredCounters.count
        logger.info("pruned expired guests", metadata: ["expiredGuests": .number(Int64(report.expiredGuests)),
                                                       "leftoverPartitions": .number(Int64(report.leftoverPartitions)),
                                                       "expiredCounters": .number(Int64(report.expiredCounters))])
        return report
    }
}
