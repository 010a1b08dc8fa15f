package dynamo

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ainotes/parley/core"
)

// Claims live in their own partition: pk = cl_<n>, the claim item under
// sk = c, its history under sk = h#<seq>. Indexes: by_list (claims of a
// thread), by_state (claims in a state), by_awaiting's "claims" partition
// (every claim).

const claimSK = "c"

func claimPK(id int64) string  { return "cl_" + strconv.FormatInt(id, 10) }
func claimsOf(th int64) string { return "claims#" + threadPK(th) }

// setEvidence stores evidence as one JSON string: it is written once and
// only ever read whole.
func (it item) setEvidence(k string, ev []core.Evidence) {
	if len(ev) > 0 {
		raw, _ := json.Marshal(ev)
		it.setS(k, string(raw))
	}
}

func (it item) evidence(k string) []core.Evidence {
	var ev []core.Evidence
	if s := it.s(k); s != "" {
		_ = json.Unmarshal([]byte(s), &ev)
	}
	return ev
}

func (it item) setIDs(k string, ids []int64) {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.FormatInt(id, 10)
	}
	it.setS(k, strings.Join(parts, ","))
}

func (it item) ids(k string) []int64 {
	var out []int64
	for _, p := range strings.Split(it.s(k), ",") {
		if n, err := strconv.ParseInt(p, 10, 64); err == nil {
			out = append(out, n)
		}
	}
	return out
}

func encodeClaim(c core.Claim) item {
	it := item{"pk": str(claimPK(c.ID)), "sk": str(claimSK)}
	it.setN("id", c.ID)
	it.setN("th", c.Thread)
	it.setS("thc", c.ThreadCreator)
	it.setN("msg", c.Message)
	it.setS("a_id", c.Author.Identity)
	it.setS("a_ext", c.Author.Extension)
	it.setS("body", c.Body)
	it.setEvidence("ev", c.Evidence)
	if c.ValidUntil != nil {
		it.setT("vu", *c.ValidUntil)
	}
	it.setS("cst", string(c.State))
	it.setN("ver", c.Version)
	it.setT("cat", c.CreatedAt)
	it.setT("uat", c.UpdatedAt)
	it.setIDs("sup", c.Supersedes)
	if c.SupersededBy != 0 {
		it.setN("sby", c.SupersededBy)
	}
	it.setS("ls_pk", claimsOf(c.Thread))
	it.setS("ls_sk", pad15(c.ID))
	it.setS("st_pk", "claim#"+string(c.State))
	it.setS("st_sk", pad15(c.ID))
	// Every claim: the inbox index holds keys only for claims (its extra
	// attributes are thread ones), so claim writes cost it nothing.
	it.setS("ib_pk", claimsAll)
	it.setS("ib_sk", pad15(c.ID))
	return it
}

func decodeClaim(it item) core.Claim {
	return core.Claim{
		ID: it.n("id"), Thread: it.n("th"), ThreadCreator: it.s("thc"), Message: it.n("msg"),
		Author: core.Party{Identity: it.s("a_id"), Extension: it.s("a_ext")}, Body: it.s("body"),
		Evidence: it.evidence("ev"), ValidUntil: it.tp("vu"), State: core.ClaimState(it.s("cst")),
		Version: it.n("ver"), CreatedAt: it.t("cat"), UpdatedAt: it.t("uat"), Supersedes: it.ids("sup"), SupersededBy: it.n("sby"),
	}
}

func encodeRecord(r core.ClaimRecord) item {
	it := item{"pk": str(claimPK(r.Claim)), "sk": str("h#" + pad10(r.Seq))}
	it.setN("seq", r.Seq)
	it.setS("kind", string(r.Kind))
	it.setS("a_id", r.Actor.Identity)
	it.setS("a_ext", r.Actor.Extension)
	it.setT("at", r.At)
	it.setEvidence("ev", r.Evidence)
	it.setN("msg", r.Message)
	it.setS("from", string(r.From))
	it.setS("to", string(r.To))
	return it
}

func decodeRecord(claim int64, it item) core.ClaimRecord {
	return core.ClaimRecord{
		Claim: claim, Seq: it.n("seq"), Kind: core.Kind(it.s("kind")), Actor: core.Party{Identity: it.s("a_id"), Extension: it.s("a_ext")},
		At: it.t("at"), Evidence: it.evidence("ev"), Message: it.n("msg"), From: core.ClaimState(it.s("from")), To: core.ClaimState(it.s("to")),
	}
}

// claimWrites are the transaction items of one claim change: the claim Put
// conditioned on its version, the history record, and for an existing claim
// the state shown beside its assert message.
func (s *Store) claimWrites(ch core.ClaimChange) []types.TransactWriteItem {
	put := &types.Put{TableName: &s.table, Item: encodeClaim(ch.Claim), ConditionExpression: aws.String("attribute_not_exists(pk)")}
	if ch.PrevVersion > 0 {
		put.ConditionExpression = aws.String("ver = :prev")
		put.ExpressionAttributeValues = map[string]types.AttributeValue{":prev": num(ch.PrevVersion)}
	}
	out := []types.TransactWriteItem{{Put: put}}
	if ch.Record != nil {
		out = append(out, types.TransactWriteItem{Put: &types.Put{TableName: &s.table, Item: encodeRecord(*ch.Record), ConditionExpression: aws.String("attribute_not_exists(pk)")}})
	}
	if ch.PrevVersion > 0 && ch.Record != nil && ch.Record.From != ch.Record.To {
		pk, sk := messageKey(ch.Claim.Message)
		out = append(out, types.TransactWriteItem{Update: &types.Update{
			TableName: &s.table, Key: s.key(pk, sk),
			UpdateExpression:          aws.String("SET cst = :st"),
			ConditionExpression:       aws.String("attribute_exists(pk)"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":st": str(string(ch.Claim.State))},
		}})
	}
	return out
}

// Claim reads one claim.
func (s *Store) Claim(ctx context.Context, id int64) (core.Claim, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, Key: s.key(claimPK(id), claimSK), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return core.Claim{}, fail("GetItem claim", err)
	}
	if len(out.Item) == 0 {
		return core.Claim{}, core.ErrNotFound
	}
	return decodeClaim(out.Item), nil
}

// ClaimHistory reads the claim and its records with one Query per page
// ("c" sorts before "h#…").
func (s *Store) ClaimHistory(ctx context.Context, id int64) (core.Claim, []core.ClaimRecord, error) {
	p := dynamodb.NewQueryPaginator(s.db, &dynamodb.QueryInput{
		TableName: &s.table, ConsistentRead: aws.Bool(true),
		KeyConditionExpression:    aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(claimPK(id))},
	})
	var cl core.Claim
	var recs []core.ClaimRecord
	found := false
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return cl, nil, fail("Query claim", err)
		}
		for _, it := range page.Items {
			if item(it).s("sk") == claimSK {
				cl, found = decodeClaim(it), true
			} else {
				recs = append(recs, decodeRecord(id, it))
			}
		}
	}
	if !found {
		return cl, nil, core.ErrNotFound
	}
	return cl, recs, nil
}

// Claims pages through claims newest first: of a thread (by_list), in a
// state (by_state), or all (by_awaiting, partition "claims"); the indexes give
// keys, one BatchGetItem per page gives the claims. A thread and a state
// together read the thread's claims and keep those in the state here, not
// with a FilterExpression (the embedded server mishandles one on a paged
// index query); such a call reads at most a few index pages.
func (s *Store) Claims(ctx context.Context, q core.ClaimQuery) ([]core.Claim, int64, error) {
	index, pkAttr, skAttr, pk := IndexAwaiting, "ib_pk", "ib_sk", claimsAll
	switch {
	case q.Thread != 0:
		index, pkAttr, skAttr, pk = IndexList, "ls_pk", "ls_sk", claimsOf(q.Thread)
	case q.State != "":
		index, pkAttr, skAttr, pk = IndexState, "st_pk", "st_sk", "claim#"+string(q.State)
	}
	var out []core.Claim
	after := ""
	if q.After != 0 {
		after = pad15(q.After)
	}
	for round := 0; round < 4; round++ {
		in := &dynamodb.QueryInput{
			TableName: &s.table, IndexName: aws.String(index), ScanIndexForward: aws.Bool(false), Limit: aws.Int32(int32(q.Limit)),
			KeyConditionExpression:    aws.String(pkAttr + " = :pk"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(pk)},
		}
		if after != "" {
			in.KeyConditionExpression = aws.String(pkAttr + " = :pk AND " + skAttr + " < :after")
			in.ExpressionAttributeValues[":after"] = str(after)
		}
		page, err := s.db.Query(ctx, in)
		if err != nil {
			return nil, 0, fail("Query claims", err)
		}
		keys := make([]map[string]types.AttributeValue, 0, len(page.Items))
		for _, it := range page.Items {
			keys = append(keys, s.key(item(it).s("pk"), claimSK))
		}
		items, err := s.fetch(ctx, keys)
		if err != nil {
			return nil, 0, err
		}
		for i, it := range items {
			cl := decodeClaim(it)
			if q.State != "" && cl.State != q.State {
				continue // a thread's claims in one state, or a stale state entry
			}
			out = append(out, cl)
			if len(out) == q.Limit {
				if i < len(items)-1 || len(page.LastEvaluatedKey) > 0 {
					return out, cl.ID, nil
				}
				return out, 0, nil
			}
		}
		if len(page.LastEvaluatedKey) == 0 || len(page.Items) == 0 {
			return out, 0, nil
		}
		after = item(page.Items[len(page.Items)-1]).s(skAttr)
	}
	// Bounded work: a short page, and where to go on from.
	n, _ := strconv.ParseInt(after, 10, 64)
	return out, n, nil
}
