package events

import (
	"fmt"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// UnmarshalImage decodes a DynamoDB stream image (NewImage, OldImage or Keys)
// into out, a non-nil pointer, honouring `dynamodbav` struct tags exactly as
// aws-sdk-go-v2's attributevalue.UnmarshalMap does for a table item.
func UnmarshalImage(image map[string]events.DynamoDBAttributeValue, out any) error {
	item := make(map[string]types.AttributeValue, len(image))
	for k, v := range image {
		av, err := toSDK(v)
		if err != nil {
			return fmt.Errorf("attribute %q: %w", k, err)
		}
		item[k] = av
	}
	return attributevalue.UnmarshalMap(item, out)
}

// MarshalImage encodes in (a struct or map) as a DynamoDB stream image, with
// the same rules as attributevalue.MarshalMap.
func MarshalImage(in any) (map[string]events.DynamoDBAttributeValue, error) {
	item, err := attributevalue.MarshalMap(in)
	if err != nil {
		return nil, err
	}
	out := make(map[string]events.DynamoDBAttributeValue, len(item))
	for k, v := range item {
		av, err := fromSDK(v)
		if err != nil {
			return nil, fmt.Errorf("attribute %q: %w", k, err)
		}
		out[k] = av
	}
	return out, nil
}

func toSDK(v events.DynamoDBAttributeValue) (types.AttributeValue, error) {
	switch v.DataType() {
	case events.DataTypeString:
		return &types.AttributeValueMemberS{Value: v.String()}, nil
	case events.DataTypeNumber:
		return &types.AttributeValueMemberN{Value: v.Number()}, nil
	case events.DataTypeBinary:
		return &types.AttributeValueMemberB{Value: v.Binary()}, nil
	case events.DataTypeBoolean:
		return &types.AttributeValueMemberBOOL{Value: v.Boolean()}, nil
	case events.DataTypeNull:
		return &types.AttributeValueMemberNULL{Value: true}, nil
	case events.DataTypeStringSet:
		return &types.AttributeValueMemberSS{Value: v.StringSet()}, nil
	case events.DataTypeNumberSet:
		return &types.AttributeValueMemberNS{Value: v.NumberSet()}, nil
	case events.DataTypeBinarySet:
		return &types.AttributeValueMemberBS{Value: v.BinarySet()}, nil
	case events.DataTypeList:
		in := v.List()
		out := make([]types.AttributeValue, len(in))
		for i, e := range in {
			av, err := toSDK(e)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			out[i] = av
		}
		return &types.AttributeValueMemberL{Value: out}, nil
	case events.DataTypeMap:
		in := v.Map()
		out := make(map[string]types.AttributeValue, len(in))
		for k, e := range in {
			av, err := toSDK(e)
			if err != nil {
				return nil, fmt.Errorf("%q: %w", k, err)
			}
			out[k] = av
		}
		return &types.AttributeValueMemberM{Value: out}, nil
	}
	return nil, fmt.Errorf("unsupported DynamoDB data type %d", v.DataType())
}

func fromSDK(v types.AttributeValue) (events.DynamoDBAttributeValue, error) {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return events.NewStringAttribute(v.Value), nil
	case *types.AttributeValueMemberN:
		return events.NewNumberAttribute(v.Value), nil
	case *types.AttributeValueMemberB:
		return events.NewBinaryAttribute(v.Value), nil
	case *types.AttributeValueMemberBOOL:
		return events.NewBooleanAttribute(v.Value), nil
	case *types.AttributeValueMemberNULL:
		return events.NewNullAttribute(), nil
	case *types.AttributeValueMemberSS:
		return events.NewStringSetAttribute(v.Value), nil
	case *types.AttributeValueMemberNS:
		return events.NewNumberSetAttribute(v.Value), nil
	case *types.AttributeValueMemberBS:
		return events.NewBinarySetAttribute(v.Value), nil
	case *types.AttributeValueMemberL:
		out := make([]events.DynamoDBAttributeValue, len(v.Value))
		for i, e := range v.Value {
			av, err := fromSDK(e)
			if err != nil {
				return av, err
			}
			out[i] = av
		}
		return events.NewListAttribute(out), nil
	case *types.AttributeValueMemberM:
		out := make(map[string]events.DynamoDBAttributeValue, len(v.Value))
		for k, e := range v.Value {
			av, err := fromSDK(e)
			if err != nil {
				return av, err
			}
			out[k] = av
		}
		return events.NewMapAttribute(out), nil
	}
	return events.DynamoDBAttributeValue{}, fmt.Errorf("unsupported attribute value %T", v)
}
