package mcapcli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// shortenJSON re-emits the JSON value js with every array cut to its
// first max elements, the rest counted in a last string element
// ("…+N more"), so that an image or a point cloud fits a terminal line.
// Numbers and strings are copied as written. max <= 0 returns js.
func shortenJSON(js []byte, max int) ([]byte, error) {
	if max <= 0 {
		return js, nil
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	var out bytes.Buffer
	if err := shortenValue(dec, &out, max); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

func shortenValue(dec *json.Decoder, out *bytes.Buffer, max int) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			out.WriteByte('{')
			for i := 0; dec.More(); i++ {
				key, err := dec.Token()
				if err != nil {
					return err
				}
				if i > 0 {
					out.WriteByte(',')
				}
				k, _ := json.Marshal(key)
				out.Write(k)
				out.WriteByte(':')
				if err := shortenValue(dec, out, max); err != nil {
					return err
				}
			}
			if _, err := dec.Token(); err != nil { // '}'
				return err
			}
			out.WriteByte('}')
		case '[':
			out.WriteByte('[')
			n := 0
			for ; dec.More(); n++ {
				if n < max {
					if n > 0 {
						out.WriteByte(',')
					}
					if err := shortenValue(dec, out, max); err != nil {
						return err
					}
					continue
				}
				var skip json.RawMessage
				if err := dec.Decode(&skip); err != nil {
					return err
				}
			}
			if n > max {
				out.WriteString(`,"…+` + strconv.Itoa(n-max) + ` more"`)
			}
			if _, err := dec.Token(); err != nil { // ']'
				return err
			}
			out.WriteByte(']')
		default:
			return fmt.Errorf("unexpected %v", t)
		}
	case json.Number:
		out.WriteString(t.String())
	case nil:
		out.WriteString("null")
	default:
		b, err := json.Marshal(t)
		if err != nil {
			return err
		}
		out.Write(b)
	}
	return nil
}
