package dynamodbstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sluicehq/sluice/idempotency"
)

// Attributes of a lane's item (idempotency.LaneStore) besides those of a
// record: its status is idempotency.LaneStatus.
const (
	AttrPosition = "position"
	AttrState    = "state"
)

var _ idempotency.LaneStore = (*Store)(nil)

// ClaimLane implements idempotency.LaneStore with one conditional
// UpdateItem:
//
//	attribute_not_exists(#pk) OR #exp < :now OR (#status = :lane
//	  AND (attribute_not_exists(#ipexp) OR #ipexp < :now_ms OR #owner = :owner)
//	  AND (attribute_not_exists(#pos) OR #pos < :upto))
//
// (the last line only with an Upto), and ReturnValues and
// ReturnValuesOnConditionCheckFailure ALL_OLD, so the lane comes back
// whether the lease was taken or not: a replayed batch's claim is
// refused and costs one request. A refused conditional write is billed
// as a write: one write unit per KB of the item.
func (s *Store) ClaimLane(ctx context.Context, c idempotency.LaneClaim) (*idempotency.LaneRecord, error) {
	cond := "attribute_not_exists(#pk) OR #exp < :now OR (#status = :lane AND (attribute_not_exists(#ipexp) OR #ipexp < :now_ms OR #owner = :owner)"
	names := map[string]string{"#pk": s.layout.pk, "#exp": AttrExpiration, "#status": AttrStatus, "#ipexp": AttrInProgressExpiration, "#owner": AttrOwner}
	values := map[string]types.AttributeValue{
		":now": num(c.Now.Unix()), ":now_ms": num(c.Now.UnixMilli()), ":lane": str(idempotency.LaneStatus),
		":owner": str(c.Owner), ":lease": num(c.LeaseUntil.UnixMilli()), ":exp": num(c.Expires.Unix()),
	}
	if c.Upto != "" {
		cond += " AND (attribute_not_exists(#pos) OR #pos < :upto)"
		names["#pos"], values[":upto"] = AttrPosition, str(c.Upto)
	}
	cond += ")"
	out, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           &s.table,
		Key:                                 s.layout.key(c.Lane),
		UpdateExpression:                    aws.String("SET #status = :lane, #owner = :owner, #ipexp = :lease, #exp = :exp"),
		ConditionExpression:                 &cond,
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           values,
		ReturnValues:                        types.ReturnValueAllOld,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err == nil {
		rec, perr := s.lane(c.Lane, out.Attributes)
		if perr != nil {
			return nil, &idempotency.StoreError{Op: "claim lane", Key: c.Lane, Err: perr}
		}
		rec.Owner = c.Owner
		return rec, nil
	}
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		return nil, s.storeError("claim lane", c.Lane, err)
	}
	if ccf.Item == nil {
		return nil, &idempotency.StoreError{Op: "claim lane", Key: c.Lane, Err: errors.New("the claim was refused but DynamoDB returned no item")}
	}
	rec, perr := s.lane(c.Lane, ccf.Item)
	if perr != nil {
		return nil, &idempotency.StoreError{Op: "claim lane", Key: c.Lane, Err: perr}
	}
	return rec, nil
}

// SaveLane implements idempotency.LaneStore with one UpdateItem
// conditional on #status = :lane AND #owner = :owner AND
// attribute_exists(#ipexp) (the lease is held: a released one is not).
func (s *Store) SaveLane(ctx context.Context, sv idempotency.LaneSave) error {
	set := []string{"#exp = :exp"}
	var remove []string
	names := map[string]string{"#exp": AttrExpiration, "#status": AttrStatus, "#owner": AttrOwner, "#ipexp": AttrInProgressExpiration}
	values := map[string]types.AttributeValue{":exp": num(sv.Expires.Unix()), ":lane": str(idempotency.LaneStatus), ":owner": str(sv.Owner)}
	if sv.LeaseUntil.IsZero() {
		remove = append(remove, "#ipexp")
	} else {
		set = append(set, "#ipexp = :lease")
		values[":lease"] = num(sv.LeaseUntil.UnixMilli())
	}
	if sv.State != nil {
		set = append(set, "#state = :state")
		names["#state"], values[":state"] = AttrState, str(string(sv.State))
		names["#pos"] = AttrPosition
		if sv.Position == "" {
			remove = append(remove, "#pos")
		} else {
			set = append(set, "#pos = :pos")
			values[":pos"] = str(sv.Position)
		}
	}
	update := "SET " + strings.Join(set, ", ")
	if len(remove) > 0 {
		update += " REMOVE " + strings.Join(remove, ", ")
	}
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 &s.table,
		Key:                       s.layout.key(sv.Lane),
		UpdateExpression:          &update,
		ConditionExpression:       aws.String("#status = :lane AND #owner = :owner AND attribute_exists(#ipexp)"),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	})
	return s.ownedError("save lane", sv.Lane, err)
}

// lane reads a lane's item (nil: none).
func (s *Store) lane(lane string, item map[string]types.AttributeValue) (*idempotency.LaneRecord, error) {
	rec := &idempotency.LaneRecord{Lane: lane}
	if item == nil {
		return rec, nil
	}
	if st := getS(item, AttrStatus); st != idempotency.LaneStatus {
		return nil, fmt.Errorf("item has %s %q, want %s: table %s holds an idempotency record under the lane's key %q", AttrStatus, st, idempotency.LaneStatus, s.table, lane)
	}
	rec.Owner = getS(item, AttrOwner)
	rec.Position = getS(item, AttrPosition)
	if v, ok := item[AttrState].(*types.AttributeValueMemberS); ok {
		rec.State = []byte(v.Value)
	}
	exp, err := getN(item, AttrExpiration)
	if err != nil {
		return nil, err
	}
	rec.Expires = time.Unix(exp, 0)
	if _, ok := item[AttrInProgressExpiration]; ok {
		ms, err := getN(item, AttrInProgressExpiration)
		if err != nil {
			return nil, err
		}
		rec.LeaseUntil = time.UnixMilli(ms)
	}
	return rec, nil
}
