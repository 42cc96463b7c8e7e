//! grpc.reflection.v1's messages (v1alpha has the same ones under its own package name), the
//! fields a client asking for a schema and a server answering it use: a request asks for a
//! file by name, the file that defines a symbol, or the services; an answer is files
//! (serialized `google.protobuf.FileDescriptorProto`s), the service list, or an error.

use prost::Message;

/// ServerReflectionRequest.
#[derive(Clone, PartialEq, Message)]
pub struct ReflectionRequest {
    #[prost(string, tag = "1")]
    pub host: String,
    #[prost(oneof = "Ask", tags = "3, 4, 7")]
    pub ask: Option<Ask>,
}

/// What a request asks for.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum Ask {
    #[prost(string, tag = "3")]
    FileByFilename(String),
    #[prost(string, tag = "4")]
    FileContainingSymbol(String),
    #[prost(string, tag = "7")]
    ListServices(String),
}

/// ServerReflectionResponse.
#[derive(Clone, PartialEq, Message)]
pub struct ReflectionResponse {
    #[prost(string, tag = "1")]
    pub valid_host: String,
    #[prost(message, optional, tag = "2")]
    pub original_request: Option<ReflectionRequest>,
    #[prost(oneof = "Answer", tags = "4, 6, 7")]
    pub answer: Option<Answer>,
}

/// What an answer holds.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum Answer {
    #[prost(message, tag = "4")]
    Files(FileDescriptors),
    #[prost(message, tag = "6")]
    Services(ServiceList),
    #[prost(message, tag = "7")]
    Error(ReflectionError),
}

/// FileDescriptorResponse.
#[derive(Clone, PartialEq, Message)]
pub struct FileDescriptors {
    /// serialized google.protobuf.FileDescriptorProto
    #[prost(bytes = "vec", repeated, tag = "1")]
    pub files: Vec<Vec<u8>>,
}

/// ListServiceResponse.
#[derive(Clone, PartialEq, Message)]
pub struct ServiceList {
    #[prost(message, repeated, tag = "1")]
    pub services: Vec<ServiceName>,
}

/// ServiceResponse.
#[derive(Clone, PartialEq, Message)]
pub struct ServiceName {
    #[prost(string, tag = "1")]
    pub name: String,
}

/// ErrorResponse.
#[derive(Clone, PartialEq, Message)]
pub struct ReflectionError {
    #[prost(int32, tag = "1")]
    pub code: i32,
    #[prost(string, tag = "2")]
    pub message: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_carry_the_field_numbers_of_the_reflection_protocol() {
        // file_containing_symbol = 4, list_services = 7, file_by_filename = 3
        let r = ReflectionRequest {
            host: String::new(),
            ask: Some(Ask::FileContainingSymbol("a.B".into())),
        };
        assert_eq!(r.encode_to_vec(), b"\x22\x03a.B");
        let r = ReflectionRequest {
            host: String::new(),
            ask: Some(Ask::ListServices(String::new())),
        };
        assert_eq!(r.encode_to_vec(), b"\x3a\x00");
        let r = ReflectionRequest {
            host: String::new(),
            ask: Some(Ask::FileByFilename("f".into())),
        };
        assert_eq!(r.encode_to_vec(), b"\x1a\x01f");
        // an answer with list_services_response = 6 { service = 1 { name = 1 } }
        let answer = ReflectionResponse::decode(&b"\x32\x05\x0a\x03\x0a\x01x"[..]).unwrap();
        let Some(Answer::Services(l)) = answer.answer else {
            panic!("a service list: {answer:?}");
        };
        assert_eq!(l.services[0].name, "x");
        // file_descriptor_response = 4 { file_descriptor_proto = 1 }, error_response = 7
        let files = ReflectionResponse {
            answer: Some(Answer::Files(FileDescriptors {
                files: vec![b"ab".to_vec()],
            })),
            ..Default::default()
        };
        assert_eq!(files.encode_to_vec(), b"\x22\x04\x0a\x02ab");
        let error = ReflectionResponse {
            answer: Some(Answer::Error(ReflectionError {
                code: 5,
                message: "m".into(),
            })),
            ..Default::default()
        };
        assert_eq!(error.encode_to_vec(), b"\x3a\x05\x08\x05\x12\x01m");
    }
}
